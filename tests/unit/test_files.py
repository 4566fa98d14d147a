"""The pure decisions of ``memory_ls/store/files.py``: temp names, lock timeout, replace refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_ls.store.files import (
    LOCK_TIMEOUT,
    foreign_group_message,
    foreign_owner_message,
    is_temp_name,
    lock_timeout,
    read_only_message,
    replace_refusal,
    temp_name,
    write_store,
)


def test_only_the_writers_own_temp_names_are_ours() -> None:
    token = os.urandom(6).hex()
    assert is_temp_name("memory.md", temp_name("memory.md", token))
    for name in (
        "memory.md",
        "memory.md~",
        "memory.md.tmp-notes",
        ".memory.md.tmp",
        ".memory.md.old.tmp",
        ".memory.md.0123456789ab.tmp~",
        ".memory.md.0123456789AB.tmp",  # the writer only makes lowercase hex
        ".memory.md.0123456789a.tmp",
        ".memory.md.0123456789abc.tmp",
        ".other.md.0123456789ab.tmp",
        "x.memory.md.0123456789ab.tmp",
    ):
        assert not is_temp_name("memory.md", name), name


def test_what_a_write_leaves_behind_is_a_temp_name(tmp_path: Path) -> None:
    store = tmp_path / "memory.md"
    made: list[str] = []
    real_replace = os.replace

    def spy(src: str, dst: str, **kw: object) -> None:
        made.append(os.path.basename(src))
        real_replace(src, dst, **kw)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", spy)
        write_store(store, "- a\n")
    assert len(made) == 1 and is_temp_name("memory.md", made[0])


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        (None, LOCK_TIMEOUT),
        ("", LOCK_TIMEOUT),
        ("2.5", 2.5),
        (" 3 ", 3.0),
        ("0", 0.0),
        ("-1", LOCK_TIMEOUT),
        ("nan", LOCK_TIMEOUT),
        ("inf", LOCK_TIMEOUT),
        ("ten", LOCK_TIMEOUT),
    ],
)
def test_lock_timeout_from_the_environment(raw: str | None, seconds: float) -> None:
    env = {} if raw is None else {"MEMORY_LS_LOCK_TIMEOUT": raw}
    assert lock_timeout(env) == seconds
    assert LOCK_TIMEOUT == 10.0


def test_replace_refusals() -> None:
    path = Path("/p/.pi/memory.md")
    # read-only: for everyone, root included
    assert replace_refusal(path, 0o100444, 0, 0, 0, [0]) == read_only_message(path)
    assert replace_refusal(path, 0o100444, 1000, 1000, 1000, [1000]) == read_only_message(path)
    # root may give the new file any owner
    assert replace_refusal(path, 0o100644, 12345, 12345, 0, [0]) is None
    # anyone else: only their own file, in one of their groups
    assert replace_refusal(path, 0o100644, 1000, 1000, 1000, [1000]) is None
    assert replace_refusal(path, 0o100666, 0, 0, 1000, [1000]) == foreign_owner_message(path, 0)
    assert replace_refusal(path, 0o100664, 1000, 50, 1000, [1000, 50]) is None
    assert replace_refusal(path, 0o100664, 1000, 50, 1000, [1000]) == foreign_group_message(
        path, 50
    )
    for message in (read_only_message(path), foreign_owner_message(path, 0)):
        assert message.endswith(f": {path}")
