"""The store layer's disk facts: one position for a bad byte, no read of a FIFO (issue 9)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memory_ls.store.facts import invalid_utf8_position, read_disk_bytes


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"- ok\n", None),
        (b"- caf\xe9\n", (5, 0, 5)),
        (b"\xef\xbb\xbf- caf\xe9\n", (8, 0, 5)),  # the BOM is no column
        (b"\xef\xbb\xbf- a\r\n- \xc3\xa9\xff\n", (12, 1, 3)),  # CRLF; characters, not bytes
        (b"- a\r- b\xff", (7, 0, 7)),  # a lone CR does not end a line (SPEC §2)
    ],
)
def test_invalid_utf8_position(data: bytes, expected: tuple[int, int, int] | None) -> None:
    assert invalid_utf8_position(data) == expected


def test_a_character_cut_off_at_the_end_of_a_partial_read_is_no_error() -> None:
    data = "- é".encode()[:-1]
    assert invalid_utf8_position(data, complete=False) is None
    assert invalid_utf8_position(data) == (2, 0, 2)
    assert invalid_utf8_position(b"- \xff" + data, complete=False) == (2, 0, 2)


def test_a_regular_file_is_read_and_a_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "memory.md"
    target.write_bytes(b"- a\n- b\n")
    read = read_disk_bytes(target, 4)
    assert (read.data, read.size, read.complete, read.error) == (b"- a\n", 8, False, None)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    read = read_disk_bytes(link, 100)
    assert read.symlink and read.data == b""
    missing = read_disk_bytes(tmp_path / "nope.md", 100)
    assert missing.error is not None and missing.error.startswith("Cannot read ")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "memory.md"
    os.mkfifo(fifo)
    results = []
    worker = threading.Thread(target=lambda: results.append(read_disk_bytes(fifo, 100)))
    worker.start()
    worker.join(5)
    if worker.is_alive():  # unblock the reader so the test run can end
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert results[0].error == f"Memory file is not a regular file: {fifo}"
