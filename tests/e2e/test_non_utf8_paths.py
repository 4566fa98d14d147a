"""A project whose folder name is not UTF-8 (``b"caf\\xe9"``), through a real ``memory-ls serve``.

The editor names it ``file:///…/caf%E9``: the server must read that as the folder it
is (pygls alone reads ``caf\\ufffd``, a folder that does not exist) and must be able
to write a URI for it (pygls alone raises), e.g. in a diagnostic's related
information pointing at the project store.
"""

from __future__ import annotations

import os
import sys

import pytest

from memory_ls.core.text import HEADER
from memory_ls.server.uris import path_of_uri, uri_of_path
from tests.conftest import new_project

pytestmark = pytest.mark.skipif(
    sys.platform in ("win32", "darwin"), reason="the file system must take any bytes in a name"
)


def test_uris_of_non_utf8_names_round_trip(tmp_path) -> None:
    path = str(tmp_path / os.fsdecode(b"caf\xe9") / ".pi" / "memory.md")
    uri = uri_of_path(path)
    assert "/caf%E9/.pi/memory.md" in uri
    assert path_of_uri(uri) == path
    assert path_of_uri(uri_of_path("/tmp/café b")) == "/tmp/café b"


async def test_a_non_utf8_project_is_served(start, workspace) -> None:
    project = new_project(workspace.root.parent / os.fsdecode(b"caf\xe9"))
    store = project / ".pi" / "memory.md"
    workspace.write(workspace.global_store, ["shared note"])
    s = await start(folders=[project], init_options={"trusted": True})

    added = await s.command("memory.add", {"text": "shared note", "scope": "project"})
    assert "error" not in added, added
    assert store.read_text(encoding="utf-8") == f"{HEADER}\n\n- shared note\n"
    path = await s.command("memory.path")
    assert path["project"] == str(store)  # JSON escapes the lone surrogate: the same path

    project_uri = s.open(store)
    [other] = await s.codes(project_uri, "cross-scope-duplicate")
    assert other.message == "Also in global memory: shared note"

    # A linked worktree's .pi/memory.md: its diagnostic points at the real store.
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # as git writes it
    gitdir = project / ".git" / "worktrees" / "tree"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    tree = workspace.home / "tree"
    (gitdir / "gitdir").write_bytes(os.fsencode(tree / ".git") + b"\n")
    tree.mkdir()
    (tree / ".git").write_bytes(b"gitdir: " + os.fsencode(gitdir) + b"\n")
    stray = tree / ".pi" / "memory.md"
    workspace.write(stray, ["stray"])
    [found] = await s.codes(s.open(stray), "not-the-store")
    assert found.related_information is not None
    assert [r.location.uri for r in found.related_information] == [uri_of_path(store)]
