"""Which store an open file is, and what is read of it, through a real ``memory-ls serve``.

The store layer decides both for the editor and ``check`` alike: one classifier
(``store.paths.classify_store_path``) and one look at the file
(``store.facts.memory_file_facts``), SPEC §1 and §7 Documents.
"""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER


async def test_a_folder_linked_to_pi_opens_the_project_store(start, workspace):
    workspace.write(workspace.global_store, ["shared note"])
    workspace.write(workspace.project_store, ["shared note"])
    (workspace.root / "notes").symlink_to(".pi")
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.root / "notes" / "memory.md")
    ds = await s.codes(uri, "cross-scope-duplicate")
    assert "Also in global memory: shared note" in {d.message for d in ds}


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
async def test_a_refused_store_is_not_read_for_its_facts(start, workspace, tmp_path, preset):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "memory.md").write_bytes(HEADER.encode() + b"\n\n- caf\xe9\n")
    (workspace.root / ".pi").symlink_to(elsewhere)
    s = await start(preset, init_options={"trusted": True})
    uri = s.open(workspace.project_store, text=f"{HEADER}\n\n- cafe\n")
    ds = await s.codes(uri, "outside-project")
    # `check` does not read it either: the bad byte out there is nobody's business.
    assert "invalid-utf8" not in {d.code for d in ds}


@pytest.mark.parametrize("how", ["initializationOptions", "configuration"])
async def test_an_agent_dir_in_the_projects_pi_refuses_the_project_scope(start, workspace, how):
    """SPEC §1: the scopes never become one file. ``agentDir`` naming the project's
    ``.pi`` leaves the file as global memory; the project scope is refused, and the
    open file says why."""
    pi = workspace.root / ".pi"
    store = workspace.write("project", ["shared note"])
    before = store.read_text()
    message = (
        f"Refusing to use {pi}: its memory.md is the global memory file ({store}); "
        "project and global memory must be two files."
    )
    settings = {"agentDir": str(pi), "trusted": True}
    if how == "initializationOptions":
        s = await start(init_options=settings)
    else:
        s = await start(init_options={"trusted": True}, configuration=settings)
    uri = s.open(store)
    ds = await s.codes(uri, "outside-project")
    assert [(d.message, d.severity) for d in ds if d.code == "outside-project"] == [
        (message, lsp.DiagnosticSeverity.Error)
    ]
    for name, argument in (
        ("memory.add", {"text": "planted"}),
        ("memory.forget", {"text": "shared note"}),
        ("memory.move", {"text": "shared note", "scope": "global"}),
    ):
        r = await s.command(name, argument)
        assert r["error"] == message, name
        assert (r["project"], r["global"]) == ([], ["shared note"]), name
    assert store.read_text() == before
    r = await s.command("memory.add", {"text": "global note", "scope": "global"})
    assert r["changed"] is True and "error" not in r
    assert store.read_text() == f"{before}- global note\n"  # written once
    inject = await s.command("memory.inject")
    assert inject["included"] == 2 and "project:" not in inject["body"]
    assert inject["body"].count("- shared note") == 1
