"""``memory_ls/store/files.py``: temp names, lock timeout, replace refusals, and the bytes a
read keeps (a read under the lock takes a known text only for the very same bytes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core.text import BOM
from memory_ls.store.files import (
    LOCK_TIMEOUT,
    foreign_group_message,
    foreign_owner_message,
    is_temp_name,
    lock_timeout,
    read_only_message,
    read_store,
    replace_refusal,
    rewrite_store,
    stamp_of,
    store_lock,
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


# -- the bytes of a read, kept: a read under the lock takes a known text, never a stale one --

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
"""Any text a store can hold (no lone surrogates: UTF-8 cannot write them)."""


@settings(max_examples=150, deadline=None)
@given(start=TEXT, more=TEXT, bom=st.booleans(), extend=st.booleans())
def test_a_rewrite_writes_its_text_in_utf8_and_keeps_those_bytes(
    tmp_path_factory: pytest.TempPathFactory, start: str, more: str, bom: bool, extend: bool
) -> None:
    """Whether the new text extends the old one (its bytes then made from the old ones) or
    not, the file holds the text's own UTF-8, and the file returned says so."""
    store = tmp_path_factory.mktemp("s") / "memory.md"
    store.write_bytes((BOM + start if bom else start).encode("utf-8"))
    with store_lock(store) as folder:
        known = read_store(store, folder)
        assert known.data == store.read_bytes()
        written = rewrite_store(
            store, folder, lambda f: f.content + more if extend else more + f.content
        )
    content = (BOM + start if bom else start) + more if extend else more + BOM * bom + start
    assert store.read_bytes() == content.encode("utf-8")
    if written is None:  # nothing to change
        assert not more
    else:
        assert written.content == content and written.data == store.read_bytes()
        assert written.stamp == stamp_of(store)


def test_a_read_takes_the_known_text_only_for_the_very_same_bytes(tmp_path: Path) -> None:
    """Same bytes: the known text itself (not decoded again). Other bytes, even of the same
    size in the same inode with the mtime put back (no stamp shows it): the file's own."""
    store = tmp_path / "memory.md"
    store.write_bytes("- naïve 😀 note\n- b\n".encode())
    known = read_store(store)
    again = read_store(store, known=known)
    assert again.content is known.content and again.data is known.data
    st = os.stat(store)
    with open(store, "r+b") as f:
        f.write("- naïve 😁".encode())  # in place: same inode, same size
    os.utime(store, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert stamp_of(store) == known.stamp
    edited = read_store(store, known=known)
    assert edited.content == "- naïve 😁 note\n- b\n" and edited.data == store.read_bytes()
    broken = b"- \xff\n"
    store.write_bytes(broken)
    assert read_store(store, known=known).invalid_utf8_at == 2
    assert read_store(store, known=known).data is None  # not the text's own bytes
