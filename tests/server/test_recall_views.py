"""Hover and the code lens, in process: they render the core's recall verdict.

``core.recall.note_recall`` and ``scope_recall`` decide whether a note or a store
is recalled and why not; these tests pin what each verdict looks like in the
editor (the server builds no transport here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER
from memory_ls.server.diagnostics import DocState
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.hover import hover
from memory_ls.server.lens import lens_title
from memory_ls.server.server import MemoryServer
from memory_ls.server.settings import Settings
from tests.conftest import Workspace

CAP = 512
BIG = "b" * 400
"""Left out under :data:`CAP`."""


def server(
    workspace: Workspace, project: list[str], global_: list[str], *, trusted: bool, inject: bool
) -> MemoryServer:
    config = {"memory": {"maxInjectBytes": CAP, "inject": inject}}
    (workspace.agent_dir / "bytefly.json").write_text(json.dumps(config))
    for scope, notes in (("project", project), ("global", global_)):
        workspace.write(scope, f"{HEADER}\n\n" + "".join(f"- {n}\n" for n in notes))
    ls = MemoryServer()
    settings = Settings(agent_dir=str(workspace.agent_dir), trusted=trusted)
    ls.projects.configure(settings, [workspace.root])
    return ls


def open_store(ls: MemoryServer, path: Path) -> str:
    info = ls.projects.describe(path)
    assert info is not None
    doc = MemoryDocument(path.as_uri(), path, path.read_text(), 1)
    ls.projects.open(doc)
    ls.analysis.states[doc.uri] = DocState(info)
    return doc.uri


def hover_text(ls: MemoryServer, uri: str, line: int) -> str:
    params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, 3))
    found = hover(ls, params)
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


def test_a_recalled_note_and_a_left_out_one(workspace: Workspace) -> None:
    ls = server(workspace, ["a", BIG], ["g"], trusted=True, inject=True)
    uri = open_store(ls, workspace.project_store)
    plan, _ = ls.projects.plan(ls.projects.default_runtime())
    used = f"{plan.used}/{CAP}"
    assert hover_text(ls, uri, 2).split("\n\n") == [
        "**project memory** note · 4 bytes in the recall body",
        f"In recall ({used} bytes used).",
    ]
    assert hover_text(ls, uri, 3).split("\n\n") == [
        f"**project memory** note · {len(BIG) + 3} bytes in the recall body",
        f"**Left out of recall**: the body uses {plan.used} of {CAP} bytes (maxInjectBytes).",
    ]
    assert lens_title(ls, uri) == f"2 notes · {used} bytes in recall · 1 left out"


def test_recall_off(workspace: Workspace) -> None:
    ls = server(workspace, ["a"], ["g"], trusted=True, inject=False)
    uri = open_store(ls, workspace.global_store)
    assert hover_text(ls, uri, 2).split("\n\n")[1] == (
        "Recall is off (`inject: false`): not sent to the model."
    )
    assert lens_title(ls, uri) == "1 notes · recall off"


@pytest.mark.parametrize("inject", [True, False])
def test_an_untrusted_project_says_so_first(workspace: Workspace, inject: bool) -> None:
    ls = server(workspace, ["a"], ["g"], trusted=False, inject=inject)
    uri = open_store(ls, workspace.project_store)
    summary = ls.projects.default_runtime().trust().summary  # names the rule (SPEC §4)
    assert summary.startswith("untrusted (rule: explicit;")
    assert hover_text(ls, uri, 2).split("\n\n")[1] == f"Not recalled: the project is {summary}."
    assert lens_title(ls, uri) == f"1 notes · not recalled: {summary}"


def test_a_pi_memory_that_is_not_the_store_gets_its_cost_only(
    workspace: Workspace,
) -> None:
    ls = server(workspace, ["a"], ["g"], trusted=True, inject=True)
    lone = workspace.root / "sub" / ".pi" / "memory.md"
    lone.parent.mkdir(parents=True)
    lone.write_text(f"{HEADER}\n\n- elsewhere\n")
    uri = open_store(ls, lone)
    assert hover_text(ls, uri, 2) == "**not a memory** note · 12 bytes in the recall body"
    assert lens_title(ls, uri) is None


@pytest.mark.parametrize("trusted", [True, False])
def test_not_injected_flags_only_what_the_plan_left_out(
    workspace: Workspace, trusted: bool
) -> None:
    ls = server(workspace, ["a", BIG], ["g"], trusted=trusted, inject=True)
    uri = open_store(ls, workspace.project_store)
    codes = [f.code for f in ls.analysis.findings(ls.projects.documents[uri])]
    # An untrusted project's notes are never offered to the plan, so none is "left out".
    assert ("not-injected" in codes) == trusted
    assert ("untrusted" in codes) == (not trusted)
