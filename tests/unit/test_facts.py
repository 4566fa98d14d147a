"""The store layer's disk facts: one position for a bad byte, no read of a FIFO (issue 9)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memory_ls.store.facts import invalid_utf8_position, memory_file_facts, read_disk_bytes


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


# -- every fact about a memory file, from one look (the editor and `check`) ------------------


def test_a_regular_file_and_its_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "memory.md"
    path.write_bytes(b"- ok\n- caf\xe9\n")
    facts = memory_file_facts(path, 1024)
    assert (facts.exists, facts.symlink, facts.regular, facts.size) == (True, False, True, 12)
    assert facts.data == b"- ok\n- caf\xe9\n"
    assert facts.invalid_utf8_at == (10, 1, 5)
    assert (facts.outside_project, facts.error) == (None, None)


def test_a_missing_file(tmp_path: Path) -> None:
    facts = memory_file_facts(tmp_path / "memory.md", 1024)
    assert not facts.exists and not facts.regular
    assert facts.error is not None and facts.error.startswith("Cannot read ")


def test_a_symlink_exists_and_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "target.md").write_bytes(b"- caf\xe9\n")
    link = tmp_path / "memory.md"
    link.symlink_to(tmp_path / "target.md")
    facts = memory_file_facts(link, 1024)
    assert (facts.exists, facts.symlink, facts.regular) == (True, True, False)
    assert (facts.data, facts.invalid_utf8_at, facts.error) == (b"", None, None)
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere.md")
    assert memory_file_facts(dangling, 1024).exists


def test_a_folder_is_there_but_not_a_regular_file(tmp_path: Path) -> None:
    folder = tmp_path / "memory.md"
    folder.mkdir()
    facts = memory_file_facts(folder, 1024)
    assert facts.exists and not facts.regular
    assert facts.error == f"Memory file is not a regular file: {folder}"


def test_a_partial_read_keeps_the_whole_size(tmp_path: Path) -> None:
    path = tmp_path / "memory.md"
    path.write_bytes("- é".encode() * 10)
    facts = memory_file_facts(path, 4)  # cuts "é" in half: not an error
    assert (facts.size, facts.data, facts.invalid_utf8_at) == (40, "- é".encode()[:4], None)


@pytest.fixture
def refused(tmp_path: Path) -> Path:
    """A project whose ``.pi`` leads outside it, to a store holding a bad byte."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "memory.md").write_bytes(b"- caf\xe9\n")
    (root / ".pi").symlink_to(outside)
    return root.resolve()


def test_a_refused_project_store_is_not_looked_at(refused: Path) -> None:
    message = (
        f"Refusing to use {refused}/.pi: it resolves outside the project "
        f"({refused.parent / 'outside'})."
    )
    for facts in (
        memory_file_facts(refused / ".pi" / "memory.md", 1024),  # judged as written
        memory_file_facts(refused.parent / "outside" / "memory.md", 1024, refused),  # by its root
    ):
        assert facts.outside_project == message
        assert (facts.exists, facts.size, facts.data, facts.invalid_utf8_at) == (
            False,
            0,
            b"",
            None,
        )


def test_the_same_file_reached_from_outside_the_project_is_read(refused: Path) -> None:
    facts = memory_file_facts(refused.parent / "outside" / "memory.md", 1024)
    assert facts.outside_project is None
    assert facts.invalid_utf8_at == (5, 0, 5)
