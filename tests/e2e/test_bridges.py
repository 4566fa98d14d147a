"""SPEC §15 through a real server: memory.import, memory.export, and export-stale with its fix."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from lsprotocol import types as lsp

from memory_ls.core.bridges import EXPORT_BEGIN, EXPORT_END, block_lines
from memory_ls.core.recall import recall_plan
from memory_ls.core.text import HEADER

from .conftest import PRESETS, apply_text_edits, code_actions, edits_for, uri_of

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "bridges"


def validate(name: str, value: object) -> None:
    schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(value)


def block(project: list[str], global_: list[str], eol: str = "\n") -> str:
    return eol.join(block_lines(recall_plan(project, global_, 8192, True).body))


def stale_codes(diagnostics: list[lsp.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics if d.code == "export-stale"]


# -- memory.import -------------------------------------------------------------------------


async def test_import_command(start, workspace):
    workspace.write("project", ["use pnpm"])
    shutil.copyfile(FIXTURES / "gemini-GEMINI.md", workspace.root / "GEMINI.md")
    shutil.copyfile(FIXTURES / "hermes-MEMORY.md", workspace.root / "MEMORY.md")
    s = await start("visual-studio-code")
    notes = workspace.root / "notes.md"
    notes.write_text("- Use pnpm.\n- " + "z" * 501 + "\n")
    r = await s.command(
        "memory.import",
        {"files": [uri_of(workspace.root / "GEMINI.md"), "MEMORY.md", str(notes)]},
    )
    validate("import-result", r)
    assert r["added"] == [
        "The user prefers tabs over spaces",
        "Deploys go through `./scripts/deploy.sh staging`",
        "My favourite colour is blue",
        "The project uses Python 3.12 and uv",
        "User prefers concise answers. Multi-line entries are one note: they keep going "
        "until the next separator.",
        "CI runs on GitHub Actions; secrets live in the org vault",
    ]
    assert r["skipped"] == ["Use pnpm."]
    assert r["refused"] == [{"text": "z" * 501, "error": "text is longer than 500 characters."}]
    text = workspace.project_store.read_text()
    assert text.startswith(f"{HEADER}\n\n- use pnpm\n- The user prefers tabs over spaces\n")

    r = await s.command("memory.import", {"files": ["GEMINI.md"], "format": "gemini"})
    validate("import-result", r)
    assert r["added"] == [] and len(r["skipped"]) == 3 and r["refused"] == []


async def test_import_command_refusals(start, workspace):
    s = await start("neovim")
    for arg, error in (
        ({}, "files is required: a list of paths or file URIs."),
        ({"files": []}, "files is required: a list of paths or file URIs."),
        ({"files": [3]}, "files is required: a list of paths or file URIs."),
        (
            {"files": ["x.md"], "format": "yaml"},
            "format must be one of auto, markdown, claude, gemini, hermes.",
        ),
        ({"files": ["x.md"], "scope": "team"}, "scope must be one of project, global."),
        ({"files": ["missing.md"]}, f"No such import file: {workspace.root / 'missing.md'}"),
    ):
        r = await s.command("memory.import", arg)
        validate("import-result", r)
        assert r == {"added": [], "skipped": [], "refused": [], "error": error}
    assert not workspace.project_store.exists()


async def test_import_into_an_open_store_updates_the_buffer(start, workspace):
    store = workspace.write("project", ["first"])
    s = await start("visual-studio-code")
    uri = s.open(store)
    notes = workspace.root / "notes.md"
    notes.write_text("- imported one\n- imported two\n")
    r = await s.command("memory.import", {"files": [str(notes)]})
    assert r["added"] == ["imported one", "imported two"]
    assert (
        s.buffers[uri]
        == store.read_text()
        == f"{HEADER}\n\n- first\n- imported one\n- imported two\n"
    )


async def test_import_is_refused_for_an_untrusted_project(start, workspace):
    s = await start("emacs", init_options={"trusted": False})
    notes = workspace.root / "notes.md"
    notes.write_text("- a note\n")
    r = await s.command("memory.import", {"files": [str(notes)]})
    assert r["added"] == [] and r["refused"][0]["text"] == "a note"
    assert "untrusted" in r["refused"][0]["error"]
    r = await s.command("memory.import", {"files": [str(notes)], "scope": "global"})
    assert r["added"] == ["a note"]


# -- memory.export -------------------------------------------------------------------------


async def test_export_command(start, workspace):
    workspace.write("project", ["use pnpm"])
    workspace.write("global", ["answer in English"])
    agents = workspace.root / "AGENTS.md"
    agents.write_text("# Agents\n")
    s = await start("visual-studio-code")
    r = await s.command("memory.export", {"check": True})
    validate("export-result", r)
    assert r["changed"] is True and r["status"] == "added"
    assert agents.read_text() == "# Agents\n"
    r = await s.command("memory.export", {})
    validate("export-result", r)
    assert r["status"] == "added" and r["path"] == str(agents)
    assert agents.read_text() == "# Agents\n\n" + block(["use pnpm"], ["answer in English"]) + "\n"
    r = await s.command("memory.export", {"to": "AGENTS.md"})
    assert r["status"] == "current" and r["changed"] is False
    r = await s.command("memory.export", {"to": uri_of(workspace.root / "CLAUDE.md")})
    assert r["status"] == "created"
    assert (workspace.root / "CLAUDE.md").read_text() == block(
        ["use pnpm"], ["answer in English"]
    ) + "\n"
    for arg, error in (
        ({"to": 3}, "to must be a path or a file URI."),
        ({"check": "yes"}, "check must be true or false."),
    ):
        r = await s.command("memory.export", arg)
        validate("export-result", r)
        assert r["error"] == error and r["changed"] is False


async def test_export_command_never_exports_an_untrusted_project(start, workspace):
    workspace.write("project", ["project secret"])
    workspace.write("global", ["answer in English"])
    s = await start("visual-studio-code", init_options={"trusted": False})
    r = await s.command("memory.export", {})
    assert r["status"] == "created"
    text = (workspace.root / "AGENTS.md").read_text()
    assert "project secret" not in text and "answer in English" in text


# -- export-stale --------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md", "GEMINI.md"])
async def test_export_stale_and_its_fix(start, workspace, preset, name):
    workspace.write("project", ["use pnpm"])
    path = workspace.root / name
    eol = "\r\n" if name == "GEMINI.md" else "\n"
    before = f"# {name}{eol}{eol}Prose é 🎉 kept.{eol}"
    after = f"{eol}Tail.{eol}"
    path.write_bytes((before + block(["use npm"], [], eol) + after).encode())
    s = await start(preset)
    uri = s.open(path, path.read_bytes().decode())
    found = await s.wait_for(uri, lambda ds: stale_codes(ds) == ["export-stale"])
    (diag,) = found
    assert diag.severity == lsp.DiagnosticSeverity.Information and diag.source == "memory"
    assert diag.range.start == lsp.Position(3, 0)
    assert diag.range.end == lsp.Position(3 + len(block(["use npm"], []).split("\n")) - 1, 22)
    actions = await code_actions(s, uri, 2, only=["quickfix"], diagnostics=[diag])
    (fix,) = [a for a in actions if isinstance(a, lsp.CodeAction) and a.edit is not None]
    assert fix.title == "Rewrite the memory-ls block from memory.md"
    new = apply_text_edits(s.buffers[uri], edits_for(fix.edit, uri), s.encoding)
    assert new == before + block(["use pnpm"], [], eol) + after
    s.replace_all(uri, new)
    await s.wait_for(uri, lambda ds: not ds)


async def test_export_stale_follows_the_store_and_says_when_edited_by_hand(start, workspace):
    workspace.write("project", ["use pnpm"])
    agents = workspace.root / "AGENTS.md"
    agents.write_text("# A\n\n" + block(["use pnpm"], []) + "\n")
    s = await start("visual-studio-code")
    uri = s.open(agents)
    await s.wait_for(uri, lambda ds: not ds)
    await s.command("memory.add", {"text": "a new note"})
    (diag,) = await s.wait_for(uri, lambda ds: stale_codes(ds) == ["export-stale"])
    assert "differs from the current recall body" in diag.message
    s.replace_all(uri, f"# A\n\n{EXPORT_BEGIN}\nmy own words\n{EXPORT_END}\n")
    (diag,) = await s.wait_for(uri, lambda ds: len(ds) == 1 and "edited by hand" in ds[0].message)
    # A block with no end marker cannot be rewritten safely: no diagnostic, no fix.
    s.replace_all(uri, f"# A\n\n{EXPORT_BEGIN}\nmy own words\n")
    await s.wait_for(uri, lambda ds: not ds)


async def test_export_stale_only_on_instruction_files_holding_the_block(start, workspace):
    workspace.write("project", ["use pnpm"])
    other = workspace.root / "README.md"
    other.write_text(block(["use npm"], []) + "\n")
    plain = workspace.root / "AGENTS.md"
    plain.write_text("# No block here\n")
    s = await start("visual-studio-code")
    readme, agents = s.open(other), s.open(plain)
    await s.wait_for(agents, lambda ds: not ds)
    assert await s.diagnostics(readme) == []
    assert not await code_actions(s, readme, 0)


async def test_export_stale_can_be_turned_off(start, workspace):
    workspace.write("project", ["use pnpm"])
    agents = workspace.root / "AGENTS.md"
    agents.write_text(block(["use npm"], []) + "\n")
    s = await start("visual-studio-code", init_options={"severity": {"export-stale": "off"}})
    uri = s.open(agents)
    await s.wait_for(uri, lambda ds: not ds)


async def test_hostile_import_and_export_arguments_are_answered_and_write_nothing_wrong(
    start, workspace, tmp_path
):
    # An attacker (or a careless client) drives the commands: every request is
    # answered with a clear error, nothing hangs, no store gets a block written into it.
    workspace.write("project", ["use pnpm"])
    workspace.write("global", ["answer in English"])
    project_before = workspace.project_store.read_bytes()
    global_before = workspace.global_store.read_bytes()
    os.mkfifo(workspace.root / "fifo")
    (workspace.root / "folder").mkdir()
    outside = tmp_path / "bashrc"
    outside.write_text("export PATH=$PATH\n")
    (workspace.root / "CLAUDE.md").symlink_to(outside)
    s = await start("neovim")
    for files in (["fifo"], ["/dev/zero"], ["folder"], [str(workspace.root / "fifo")]):
        r = await s.command("memory.import", {"files": files})
        assert r["added"] == [] and "not a regular file" in r["error"]
    for to, error in (
        (".pi/memory.md", "Refusing to export into a memory file"),
        (str(workspace.global_store), "Refusing to export into a memory file"),
        (uri_of(workspace.project_store), "Refusing to export into a memory file"),
        ("CLAUDE.md", "resolves outside the project"),
        ("fifo", "not a regular file"),
        ("folder", "not a regular file"),
        ("no/such/dir/AGENTS.md", "No such directory"),
    ):
        r = await s.command("memory.export", {"to": to})
        validate("export-result", r)
        assert error in r["error"] and r["changed"] is False, (to, r)
    assert workspace.project_store.read_bytes() == project_before
    assert workspace.global_store.read_bytes() == global_before
    assert outside.read_text() == "export PATH=$PATH\n"


async def test_import_command_with_propose_queues_for_review(start, workspace):
    store = workspace.write("project", ["use pnpm"])
    before = store.read_bytes()
    s = await start("visual-studio-code")
    counts: list[Any] = []

    @s.client.feature("memory/inbox")
    def inbox_counts(params: Any) -> None:
        counts.append(params)

    uri = s.open(store)
    waiting = await s.command("memory.propose", {"action": "add", "text": "tests need DB"})
    assert waiting["waiting"] == 1
    notes = workspace.root / "notes.md"
    notes.write_text("- Use pnpm.\n- Tests need DB!\n- run make build first\n- " + "z" * 501 + "\n")
    r = await s.command("memory.import", {"files": [str(notes)], "propose": True})
    validate("import-result", r)
    assert r == {
        "added": ["run make build first"],
        "skipped": ["Use pnpm.", "Tests need DB!"],
        "refused": [{"text": "z" * 501, "error": "text is longer than 500 characters."}],
    }
    assert store.read_bytes() == before and s.buffers[uri] == before.decode()
    listing = await s.command("memory.inbox", {})
    assert [(p["text"], p["by"]) for p in listing["project"]] == [
        ("tests need DB", "lsp"),
        ("run make build first", "lsp"),  # the test client gives no clientInfo
    ]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not any(getattr(c, "project", None) == 2 for c in counts):
        assert loop.time() < deadline, f"no memory/inbox with 2 proposals: {counts}"
        await asyncio.sleep(0.05)

    notes.write_text("- deploys go through staging\n")
    r = await s.command("memory.import", {"files": ["notes.md"], "propose": True, "by": "codex"})
    assert r["added"] == ["deploys go through staging"]
    listing = await s.command("memory.inbox", {})
    assert listing["project"][-1]["by"] == "codex"

    bad = await s.command("memory.import", {"files": ["notes.md"], "propose": "yes"})
    assert bad == {
        "added": [],
        "skipped": [],
        "refused": [],
        "error": "propose must be true or false.",
    }
    accepted = await s.command("memory.accept", {"all": True})
    assert "error" not in accepted
    assert (
        s.buffers[uri]
        == store.read_text()
        == (
            f"{HEADER}\n\n- use pnpm\n- tests need DB\n- run make build first\n"
            "- deploys go through staging\n"
        )
    )


async def test_import_command_with_propose_is_refused_for_an_untrusted_project(start, workspace):
    s = await start("emacs", init_options={"trusted": False})
    notes = workspace.root / "notes.md"
    notes.write_text("- a note\n")
    r = await s.command("memory.import", {"files": [str(notes)], "propose": True})
    assert r["added"] == [] and r["refused"][0]["text"] == "a note"
    assert "untrusted" in r["refused"][0]["error"]
    assert not (workspace.root / ".pi").exists()
