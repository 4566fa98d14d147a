"""Which store an open file is, and what is read of it, through a real ``memory-ls serve``.

The store layer decides both for the editor and ``check`` alike: one classifier
(``store.paths.classify_store_path``) and one look at the file
(``store.facts.memory_file_facts``), SPEC §1 and §7 Documents.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER

from .conftest import TIMEOUT, uri_of


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


async def lens_title(s, uri):
    lenses = await asyncio.wait_for(
        s.client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    assert lenses and lenses[0].command is not None
    assert lenses[0].command.command == "memory.doctor"
    return lenses[0].command.title


async def test_the_agent_dir_in_the_projects_pi_lens_and_doctor_say_so_once(start, workspace):
    """The agent dir is the project's ``.pi``: the open file's lens says the project scope
    is refused before the counts it has as global memory, and ``memory.doctor`` lists
    the one ``bytefly.json`` once and the refusal once."""
    pi = workspace.root / ".pi"
    store = workspace.write("project", ["shared note", "other note"])
    (pi / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 600}}')
    s = await start(init_options={"agentDir": str(pi), "trusted": True})
    uri = s.open(store)
    await s.codes(uri, "outside-project")
    title = await lens_title(s, uri)
    inject = await s.command("memory.inject")
    assert title == (
        f"refused as project memory · as global memory: 2 notes · "
        f"{inject['bytes']}/600 bytes in recall · 0 left out"
    )
    doctor = await s.command("memory.doctor")
    assert [src["path"] for src in doctor["config"]["sources"]] == [str(pi / "bytefly.json")]
    assert len([p for p in doctor["problems"] if "memory must be two files" in p]) == 1
    assert doctor["text"].count("bytefly.json") == 1


async def test_an_agent_dir_that_is_a_pi_leading_out_opens_as_the_global_store(
    start, workspace, tmp_path
):
    """``agentDir`` is ``<root>/.pi``, and that ``.pi`` leads out of the project: the
    file is the global store, as ``list``, ``add`` and ``doctor`` use it (the agent dir
    is the user's own choice), with the project scope's refusal on its first line, as
    ``check`` reports it. It was shown as the refused project store: its own findings
    hidden, its lens saying it was never read while commands wrote it as global."""
    elsewhere = (tmp_path / "elsewhere").resolve()
    elsewhere.mkdir()
    pi = workspace.root / ".pi"
    pi.symlink_to(elsewhere)
    (elsewhere / "memory.md").write_text(f"{HEADER}\n\n- same\n- same\n")
    (elsewhere / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 600}}')
    message = f"Refusing to use {pi}: it resolves outside the project ({elsewhere})."
    s = await start(init_options={"agentDir": str(pi), "trusted": True})
    uri = s.open(pi / "memory.md")
    ds = await s.codes(uri, "outside-project", "duplicate")
    assert sorted((str(d.code), d.range.start.line, d.message) for d in ds) == [
        ("duplicate", 3, "Duplicate of the note on line 3: same"),
        ("outside-project", 0, message),
    ]
    title = await lens_title(s, uri)
    assert title.startswith("refused as project memory · as global memory: 2 notes · "), title
    for argument in ({"text": "planted"}, {"text": "planted", "uri": uri}):
        r = await s.command("memory.add", argument)
        assert r["error"] == message, argument
        assert (r["project"], r["global"]) == ([], ["same", "same"]), argument
    r = await s.command("memory.add", {"text": "global note", "scope": "global", "uri": uri})
    assert r["changed"] is True and "error" not in r
    assert (elsewhere / "memory.md").read_text().endswith("- same\n- global note\n")
    doctor = await s.command("memory.doctor", {"uri": uri})
    assert [src["path"] for src in doctor["config"]["sources"]] == [str(pi / "bytefly.json")]
    assert doctor["problems"][:1] == [f"project: {message}"]
    assert not [p for p in doctor["problems"] if "bytefly.json" in p], doctor["problems"]


async def test_a_refused_project_stores_lens_shows_no_counts(start, workspace, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "memory.md").write_text(f"{HEADER}\n\n- out there\n")
    (workspace.root / ".pi").symlink_to(elsewhere)
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store, text=f"{HEADER}\n\n- one\n- two\n")
    await s.codes(uri, "outside-project")
    assert await lens_title(s, uri) == "project memory refused: never read, recalled or written"


async def test_a_uri_in_a_pi_that_leads_out_names_that_project(start, workspace, tmp_path):
    """A command's ``uri`` may name a file in a workspace folder, so also one in its
    project's ``.pi``: where that ``.pi`` leads out of the project, such a ``uri`` (the
    folder itself, a file in it, a missing one) picks this project, whose store is
    refused. It picked the project where the link leads (here the agent dir), and
    ``memory.add`` created a store there: written through the refused ``.pi``."""
    workspace.write("global", ["global note"])
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    (workspace.agent_dir / "SYSTEM.md").write_text("a file in the agent dir\n")
    pi = workspace.root / ".pi"
    message = f"Refusing to use {pi}: it resolves outside the project ({workspace.agent_dir})."
    s = await start(init_options={"trusted": True})
    nested = pi / "x" / ".pi" / "memory.md"  # (the store of a project out there)
    for spelled in (pi, pi / "SYSTEM.md", pi / "settings.json", pi / "sub" / "..", nested):
        for name in ("memory.add", "memory.list"):
            r = await s.command(name, {"text": "planted", "uri": uri_of(spelled)})
            assert r["error"] == message, (spelled, name)
            assert (r["project"], r["global"]) == ([], ["global note"]), (spelled, name)
        path = await s.command("memory.path", {"uri": uri_of(spelled)})
        assert path["project"] == str(workspace.project_store), spelled
    assert not (workspace.agent_dir / ".pi").exists()
    assert not (workspace.agent_dir / "x").exists()


async def test_a_store_outside_any_repository_picks_its_own_project(start, workspace, tmp_path):
    """``<dir>/.pi/memory.md`` outside every repository and workspace folder is the
    store of ``<dir>`` (as the editor says when it is opened): a command with that
    ``uri`` took the file's folder ``<dir>/.pi`` for the project, listed nothing, and
    ``memory.add`` created ``<dir>/.pi/.pi/memory.md``."""
    other = tmp_path / "other"
    store = workspace.write(other / ".pi" / "memory.md", ["other note"])
    s = await start(init_options={"trusted": True})
    path = await s.command("memory.path", {"uri": uri_of(store)})
    assert path["project"] == str(store)
    r = await s.command("memory.add", {"text": "second note", "uri": uri_of(store)})
    assert r["project"] == ["other note", "second note"] and "error" not in r
    assert not (other / ".pi" / ".pi").exists()


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
async def test_a_store_under_a_refused_pi_is_shown_refused(start, workspace, tmp_path, preset):
    """``<root>/.pi/x/.pi/memory.md`` where ``<root>/.pi`` leads out: as written it is in
    this project's refused ``.pi`` (as commands already judged it), so it shows that
    refusal and the refused store's lens, not the findings of the store of the project
    out there (its duplicate, its bad byte) nor its notes' counts."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "x" / ".git").mkdir(parents=True)
    far = elsewhere / "x" / ".pi" / "memory.md"
    workspace.write(far, HEADER.encode() + b"\n\n- same\n- same\n- caf\xe9\n")
    (workspace.root / ".pi").symlink_to(elsewhere)
    pi = workspace.root / ".pi"
    message = f"Refusing to use {pi}: it resolves outside the project ({elsewhere})."
    s = await start(preset, init_options={"trusted": True})
    nested = pi / "x" / ".pi" / "memory.md"
    text = f"{HEADER}\n\n- same\n- same\n"
    uri = s.open(nested, text=text)
    ds = await s.codes(uri, "outside-project")
    # As the refused store itself shows the same text: the buffer's own findings (showing
    # a reader their text is harmless), nothing read from the file out there.
    own = await s.codes(s.open(workspace.project_store, text=text), "outside-project")
    shown = sorted((d.code, d.message) for d in ds)
    assert shown == sorted((d.code, d.message) for d in own)
    assert ("outside-project", message) in shown
    assert "invalid-utf8" not in {code for code, _ in shown}
    assert await lens_title(s, uri) == "project memory refused: never read, recalled or written"
    r = await s.command("memory.add", {"text": "planted", "uri": uri})
    assert r["error"] == message
    assert far.read_bytes().count(b"planted") == 0


async def test_an_agent_dir_named_pi_in_a_refused_pi_is_a_global_store_looked_into(
    start, workspace, tmp_path
):
    """An agent dir ``<root>/.pi/x/.pi`` where ``<root>/.pi`` leads out: its store, opened
    as the agent dir names it, is the global store, and its bytes are looked at (a bad
    byte shown), not taken for ``<root>``'s refused store and never read."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "x" / ".pi").mkdir(parents=True)
    (workspace.root / ".pi").symlink_to(elsewhere)
    agent = workspace.root / ".pi" / "x" / ".pi"
    store = workspace.write(agent / "memory.md", HEADER.encode() + b"\n\n- caf\xe9\n")
    s = await start(init_options={"trusted": True, "agentDir": str(agent)})
    uri = s.open(store, text=f"{HEADER}\n\n- caf\ufffd\n")
    ds = await s.codes(uri, "invalid-utf8")
    assert f"{workspace.root}/.pi: it resolves outside" not in " ".join(d.message for d in ds)
