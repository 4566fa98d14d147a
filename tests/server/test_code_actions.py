"""Code actions in-process: the server object, no transport (SPEC §7 Code actions).

Each test builds the real server, initializes it and opens a store through its
handlers, then calls the code-action handler with lsprotocol params.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path

from memory_ls.core.checks import note_hash
from memory_ls.core.fixes import Edit, apply_edits
from memory_ls.server import code_actions
from memory_ls.server.document_sync import did_open
from memory_ls.server.positions import from_client
from memory_ls.server.server import MemoryServer, create_server
from tests.unit.test_schemas import validate


class _Sink:
    """A transport that keeps what the server writes (publishDiagnostics, logs)."""

    def __init__(self) -> None:
        self.data: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.data.append(data)

    def close(self) -> None:
        pass


@dataclass
class Served:
    ls: MemoryServer
    uri: str

    @property
    def lines(self) -> list[str]:
        return self.ls.projects.documents[self.uri].lines

    def diagnostics(self, code: str) -> list[lsp.Diagnostic]:
        doc = self.ls.projects.documents[self.uri]
        items = [i for i in self.ls.analysis.items(doc) if i["code"] == code]
        return [get_converter().structure(i, lsp.Diagnostic) for i in items]

    def actions(
        self,
        line: int,
        end_line: int | None = None,
        *,
        diagnostics: list[lsp.Diagnostic] | None = None,
        only: list[str] | None = None,
    ) -> list[lsp.CodeAction]:
        end = lsp.Position(end_line if end_line is not None else line, 1)
        params = lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=self.uri),
            range=lsp.Range(start=lsp.Position(line, 0), end=end),
            context=lsp.CodeActionContext(diagnostics=diagnostics or [], only=only),
        )
        return code_actions.code_action(self.ls, params) or []

    def applied(self, action: lsp.CodeAction) -> str:
        """The document's text with the action's edit applied (UTF-16 columns)."""
        assert action.edit is not None and action.edit.changes is not None
        lines = self.lines

        def col(p: lsp.Position) -> int:
            return from_client(lines[p.line], p.character, "utf-16")

        edits = [
            Edit(
                e.range.start.line,
                col(e.range.start),
                e.range.end.line,
                col(e.range.end),
                e.new_text,
            )
            for e in action.edit.changes[self.uri]
        ]
        return apply_edits(lines, edits)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """Start a server on a project whose stores hold the given notes; open one store."""

    def start(project: str, global_: str = "", *, open_scope: str = "project") -> Served:
        root = tmp_path / "project"
        (root / ".git").mkdir(parents=True, exist_ok=True)
        (root / ".pi").mkdir()
        agent = tmp_path / "agent"
        agent.mkdir(exist_ok=True)
        (root / ".pi" / "memory.md").write_text(project)
        (agent / "memory.md").write_text(global_)
        ls = create_server()
        ls.protocol.set_writer(_Sink())
        init = ls.protocol.lsp_initialize(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                workspace_folders=[lsp.WorkspaceFolder(uri=_uri(root), name="project")],
                initialization_options={"agentDir": str(agent), "trusted": True},
            )
        )
        handler, args, _ = next(init)
        handler(*args)
        with pytest.raises(StopIteration):
            init.send(None)
        store = root / ".pi" / "memory.md" if open_scope == "project" else agent / "memory.md"
        uri = _uri(store)
        item = lsp.TextDocumentItem(
            uri=uri, language_id="markdown", version=1, text=store.read_text()
        )
        did_open(ls, lsp.DidOpenTextDocumentParams(text_document=item))
        return Served(ls, uri)

    yield start


def _uri(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


HEADER = "# Memory\n\n"
PROJECT = HEADER + (
    "- use pnpm\n"  # 2
    "- use pnpm\n"  # 3: an exact duplicate
    "- Use PNPM!\n"  # 4: a near-duplicate
    "- tab\there\n"  # 5: control characters
    "- zero\u200bwidth 😀\n"  # 6: a hidden character
    "- shared fact\n"  # 7: also in global memory
    "-   \n"  # 8: a blank bullet
)
GLOBAL = HEADER + "- shared fact\n"


async def test_wire_data_is_pinned(serve: Any) -> None:
    # Clients send `data` back in codeAction requests: its JSON is part of the contract.
    # The notes' texts are not published (the note's hash names it): fixes are built from
    # the server's own finding, whose full data is pinned here.
    long_note = "x" * 501
    s = serve(PROJECT + f"- {long_note}\n", GLOBAL)
    doc = s.ls.projects.documents[s.uri]
    data = {(i["code"], i["range"]["start"]["line"]): i["data"] for i in s.ls.analysis.items(doc)}
    held = {
        ("duplicate", 3): {
            "code": "duplicate",
            "line": 3,
            "note": "use pnpm",
            "firstLine": 2,
            "exact": True,
        },
        ("duplicate", 4): {
            "code": "duplicate",
            "line": 4,
            "note": "Use PNPM!",
            "firstLine": 2,
            "exact": False,
        },
        ("control-characters", 5): {"code": "control-characters", "line": 5, "note": "tab here"},
        ("hidden-unicode", 6): {
            "code": "hidden-unicode",
            "line": 6,
            "note": "zero\u200bwidth 😀",
            "count": 1,
        },
        ("cross-scope-duplicate", 7): {
            "code": "cross-scope-duplicate",
            "line": 7,
            "note": "shared fact",
            "scope": "project",
            "otherScope": "global",
            "otherPath": str(Path(s.ls.projects.default_runtime().paths["global"])),
        },
        ("blank-note", 8): {"code": "blank-note", "line": 8, "note": ""},
        ("too-long", 9): {"code": "too-long", "line": 9, "note": long_note, "length": 501},
    }
    assert data == {
        where: {
            **{k: v for k, v in d.items() if k != "note"},
            "noteHash": note_hash(str(d["note"])),
        }
        for where, d in held.items()
    }
    # The same fingerprint in every process: a diagnostic outlives a restart in the client.
    assert data[("duplicate", 3)]["noteHash"] == "aa7b5fe2c323e917"
    # What the fixes are built from: the full data, found by code, range and message.
    full = {
        (i["code"], i["range"]["start"]["line"]): s.ls.analysis.data_of(
            doc, i["code"], i["range"], i["message"], i["data"]["noteHash"]
        )
        for i in s.ls.analysis.items(doc)
    }
    for where, d in held.items():
        assert {k: v for k, v in full[where].items() if k in d} == d  # type: ignore[union-attr]
    assert full[("duplicate", 4)] == {
        "code": "duplicate",
        "line": 4,
        "note": "Use PNPM!",
        "first": "use pnpm",
        "firstLine": 2,
        "exact": False,
    }
    assert full[("cross-scope-duplicate", 7)]["other"] == "shared fact"  # type: ignore[index]
    assert full[("too-long", 9)] == {
        "code": "too-long",
        "line": 9,
        "note": long_note,
        "length": 501,
    }


async def test_wire_data_of_not_injected(serve: Any, tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 512}}')
    notes = [f"note {i} " + "y" * 150 for i in range(5)]
    s = serve(HEADER + "".join(f"- {n}\n" for n in notes))
    doc = s.ls.projects.documents[s.uri]
    found = [i["data"] for i in s.ls.analysis.items(doc) if i["code"] == "not-injected"]
    assert len(found) == 1
    assert found[0]["code"] == "not-injected" and found[0]["line"] >= 2
    assert set(found[0]) == {"code", "line", "count", "used", "cap"}
    assert found[0]["cap"] == 512 and found[0]["count"] >= 1


def _titles(actions: list[lsp.CodeAction]) -> list[tuple[str, str | None, bool | None]]:
    return [(a.title, a.kind, a.is_preferred) for a in actions]


def _notes(text: str) -> list[str]:
    return [line[2:] for line in text.split("\n") if line.startswith("- ")]


async def test_quick_fixes_of_each_code(serve: Any) -> None:
    s = serve(PROJECT, GLOBAL)
    [exact] = [d for d in s.diagnostics("duplicate") if d.range.start.line == 3]
    acts = s.actions(3, diagnostics=[exact], only=["quickfix"])
    assert _titles(acts) == [("Remove the duplicate note", "quickfix", True)]
    assert acts[0].diagnostics == [exact]
    assert _notes(s.applied(acts[0]))[:2] == ["use pnpm", "Use PNPM!"]

    [near] = [d for d in s.diagnostics("duplicate") if d.range.start.line == 4]
    acts = s.actions(4, diagnostics=[near], only=["quickfix"])
    assert _titles(acts) == [
        ("Keep “use pnpm”", "quickfix", False),
        ("Keep “Use PNPM!”", "quickfix", False),
        ("Merge into “use pnpm; Use PNPM!”", "quickfix", False),
    ]
    assert [_notes(s.applied(a))[:3] for a in acts] == [
        ["use pnpm", "use pnpm", "tab\there"],
        ["Use PNPM!", "use pnpm", "tab\there"],
        ["use pnpm; Use PNPM!", "use pnpm", "tab\there"],
    ]

    expected = {
        "control-characters": ("Normalise the note", "tab here", 5),
        "hidden-unicode": ("Remove the hidden characters", "zerowidth 😀", 6),
        "cross-scope-duplicate": ("Forget here (it stays in global memory)", None, 7),
        "blank-note": ("Remove the blank bullet", None, 8),
    }
    for code, (title, fixed, line) in expected.items():
        [diag] = s.diagnostics(code)
        acts = s.actions(line, diagnostics=[diag], only=["quickfix"])
        assert [a.title for a in acts] == [title], code
        after = s.applied(acts[0]).split("\n")
        if fixed is not None:
            assert after[line] == f"- {fixed}"
        else:
            assert len(after) == len(s.lines) - 1  # the line is gone
            assert s.lines[line] not in after[line : line + 1]


async def test_quick_fix_for_similar_notes(serve: Any) -> None:
    s = serve(HEADER + "- run the tests before you push\n- run the tests before pushing\n")
    data = {
        "code": "similar",
        "line": 3,
        "note": "run the tests before pushing",
        "first": "run the tests before you push",
        "firstLine": 2,
        "score": 86,  # a JavaScript client sends 86.0 back as 86
    }
    diag = _diagnostic("similar", 3, data)
    acts = s.actions(3, diagnostics=[diag], only=["quickfix"])
    assert [a.title for a in acts] == [
        "Keep “run the tests before you push”",
        "Keep “run the tests before pushing”",
        "Merge into “run the tests before you push; run the tests before pushing”",
    ]
    assert _notes(s.applied(acts[1])) == ["run the tests before pushing"]


@pytest.mark.parametrize("where", ["firstLine", "extra"])
@pytest.mark.parametrize("number", [float("inf"), float("-inf")], ids=repr)
async def test_diagnostic_data_holding_an_infinity_is_not_sent_back(
    serve: Any, where: str, number: float
) -> None:
    # A client's JSON reader makes 1e999 an infinity, and pygls would write it back as
    # `Infinity`, which is not JSON: the diagnostic a quick fix names must stay JSON,
    # whether the data could still be read (an extra key) or not (a field).
    s = serve(PROJECT, GLOBAL)
    [exact] = [d for d in s.diagnostics("duplicate") if d.range.start.line == 3]
    sent = {**exact.data, where: number}
    acts = s.actions(3, diagnostics=[attrs.evolve(exact, data=sent)], only=["quickfix"])
    assert _titles(acts) == [("Remove the duplicate note", "quickfix", True)]
    named = get_converter().unstructure(acts[0].diagnostics)
    json.dumps(named, allow_nan=False)
    assert named[0]["data"] == {**exact.data, where: None}


def _diagnostic(code: str, line: int, data: object) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp.Range(start=lsp.Position(line, 2), end=lsp.Position(line, 10)),
        message="m",
        code=code,
        source="memory",
        data=data,
    )


async def test_stale_data_gives_no_fix(serve: Any) -> None:
    s = serve(PROJECT, GLOBAL)
    [exact] = [d for d in s.diagnostics("duplicate") if d.range.start.line == 3]
    # The same code, range and message, about a note that is no longer on that line.
    stale = {**exact.data, "noteHash": note_hash("a note that is not there")}
    acts = s.actions(3, diagnostics=[attrs.evolve(exact, data=stale)], only=["quickfix"])
    assert acts == []  # no empty action either
    stale = {**exact.data, "note": "a note that is not there", "first": "use pnpm"}
    acts = s.actions(3, diagnostics=[_diagnostic("duplicate", 3, stale)], only=["quickfix"])
    assert acts == []


@pytest.mark.parametrize(
    "data",
    [
        None,
        "junk",
        [1, 2],
        42,
        {},
        {"line": "3"},
        {"code": "duplicate", "line": 3},
        {"code": "duplicate", "line": 3.0, "note": "use pnpm"},
        {"code": "duplicate", "line": True, "note": "use pnpm"},
        {"code": "duplicate", "line": 3, "note": 5, "first": "use pnpm", "firstLine": 2},
        {"code": "duplicate", "line": 3, "note": "use pnpm", "first": None, "firstLine": 2},
        {"code": "duplicate", "line": 3, "note": {"x": 1}, "first": [], "firstLine": {}},
        {"code": "blank-note", "line": 3, "note": "use pnpm"},
        {"code": "duplicate", "line": 3, "noteHash": 5},
        {"code": "duplicate", "line": 3, "noteHash": {"x": 1}},
    ],
    ids=repr,
)
async def test_unreadable_data_counts_as_none(serve: Any, data: object) -> None:
    # A client may drop `data`, mangle it or send another version's shape: it is
    # ignored, and the fix is built from the diagnostic as the server has it now
    # (the one with the same code, range and message).
    s = serve(PROJECT, GLOBAL)
    [exact] = [d for d in s.diagnostics("duplicate") if d.range.start.line == 3]
    acts = s.actions(3, diagnostics=[attrs.evolve(exact, data=data)], only=["quickfix"])
    assert _titles(acts) == [("Remove the duplicate note", "quickfix", True)]
    # Not one of another version (another message or range on that line): no fix.
    acts = s.actions(3, diagnostics=[_diagnostic("duplicate", 3, data)], only=["quickfix"])
    assert acts == []


@pytest.mark.parametrize(
    "data",
    [
        {
            "code": "duplicate",
            "line": -1,
            "note": "x",
            "first": "y",
            "firstLine": -5,
            "exact": False,
        },
        {
            "code": "duplicate",
            "line": 10**30,
            "note": "x",
            "first": "y",
            "firstLine": 2,
            "exact": True,
        },
        {
            "code": "duplicate",
            "line": 99,
            "note": "x",
            "first": "y",
            "firstLine": 2,
            "exact": False,
        },
        {"code": "similar", "line": 3, "note": "x", "first": "y", "firstLine": 10**30, "score": 90},
        {"code": "hidden-unicode", "line": 99, "note": "x", "count": 1},
        {"code": "blank-note", "line": 10**30, "note": ""},
        {"code": "control-characters", "line": -3, "note": "x"},
    ],
    ids=repr,
)
async def test_data_out_of_range_gives_no_fix(serve: Any, data: dict[str, object]) -> None:
    s = serve(PROJECT, GLOBAL)
    diag = _diagnostic(str(data["code"]), 3, data)
    assert s.actions(3, diagnostics=[diag], only=["quickfix"]) == []


async def test_diagnostics_of_other_sources_are_left_alone(serve: Any) -> None:
    s = serve(PROJECT, GLOBAL)
    [exact] = [d for d in s.diagnostics("duplicate") if d.range.start.line == 3]
    other = lsp.Diagnostic(
        range=exact.range, message="m", code="duplicate", source="markdownlint", data=exact.data
    )
    assert s.actions(3, diagnostics=[other], only=["quickfix"]) == []
    no_code = lsp.Diagnostic(range=exact.range, message="m", source="memory", data=exact.data)
    assert s.actions(3, diagnostics=[no_code], only=["quickfix"]) == []


async def test_note_actions_and_fix_all(serve: Any) -> None:
    s = serve(HEADER + "- alpha\n- beta\n- beta\n")
    acts = s.actions(2)
    assert _titles(acts) == [
        ("Forget “alpha”", "refactor.rewrite", None),
        ("Move to global memory", "refactor.move", None),
        ("Fix all safe memory problems", "source.fixAll.memory", None),
    ]
    assert _notes(s.applied(acts[0])) == ["beta", "beta"]
    move = acts[1]
    assert move.edit is None and move.command is not None
    assert move.command.command == "memory.move"
    assert move.command.arguments == [{"text": "alpha", "scope": "project", "uri": s.uri}]
    assert _notes(s.applied(acts[2])) == ["alpha", "beta"]

    merge = s.actions(2, 3, only=["refactor"])
    assert _titles(merge) == [("Merge the 2 selected notes", "refactor.rewrite", None)]
    assert _notes(s.applied(merge[0])) == ["alpha; beta", "beta"]
    # A selection of whole lines ends at column 0 of the next line, which is not selected.
    params_end = s.actions(2, 3, only=["refactor.move"])
    assert [a.title for a in params_end] == []
    assert s.actions(2, only=["source.fixAll.memory"])[0].kind == "source.fixAll.memory"
    assert s.actions(0) == [s.actions(0, only=["source"])[0]]  # prose: only fixAll


async def test_actions_in_the_global_store(serve: Any) -> None:
    s = serve(HEADER + "- p\n", HEADER + "- g\n", open_scope="global")
    acts = s.actions(2, only=["refactor.move"])
    assert [a.title for a in acts] == ["Move to project memory"]
    assert acts[0].command is not None
    assert acts[0].command.arguments == [{"text": "g", "scope": "global", "uri": s.uri}]


async def test_reveal_shows_open_stores_only_and_says_why_not(server: Any) -> None:
    from tests.server.conftest import uri_of

    ws = server.workspace
    ws.write("project", ["see `src/gone.py`"])
    await server.initialize("visual-studio-code")
    uri = server.open(ws.project_store)
    where = {"start": {"line": 2, "character": 7}, "end": {"line": 2, "character": 18}}

    async def reveal(argument: Any) -> Any:
        answer = await server.client.request(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command="memory.reveal", arguments=[argument]),
        )
        if "result" in answer:
            validate("reveal-result", answer["result"])
        return answer.get("result", answer.get("error"))

    # The in-process client answers window/showDocument with null: not shown, and why.
    result = await reveal({"uri": uri, "range": where})
    assert result["shown"] is False
    assert result["error"].startswith("the client did not show the document")
    shown = server.client.requests(lsp.WINDOW_SHOW_DOCUMENT)
    assert shown == [{"uri": uri, "takeFocus": True, "selection": where}]
    other = uri_of(ws.root / "README.md")
    assert (await reveal({"uri": other, "range": where}))["error"].startswith(
        "not an open memory document"
    )
    assert await reveal({"uri": uri, "range": {"start": 1}}) == {
        "shown": False,
        "error": "memory.reveal needs a uri and a range",
    }
    # An argument that is not an object is InvalidParams, as for every command.
    invalid = await reveal([uri, where])
    assert invalid["code"] == JsonRpcInvalidParams.CODE
    assert "memory.reveal takes one JSON object argument, not list." in invalid["message"]
    assert len(server.client.requests(lsp.WINDOW_SHOW_DOCUMENT)) == 1


@pytest.mark.parametrize(
    ("preset", "titles"),
    [
        ("visual-studio-code", ["Forget this note", "Edit the note"]),
        ("emacs", ["Forget this note"]),  # no window/showDocument: nothing to select with
    ],
)
async def test_edit_the_note_only_where_the_client_can_show_it(
    server: Any, preset: str, titles: list[str]
) -> None:
    from tests import stale_project
    from tests.server.test_project_watch import judged

    ws = server.workspace
    stale_project.project(ws)
    await server.initialize(preset)
    uri = server.open(ws.project_store)
    await judged(server, uri)
    doc = server.ls.projects.documents[uri]
    item = next(i for i in server.ls.analysis.items(doc) if i["code"] == "stale-path")
    diagnostic = get_converter().structure(item, lsp.Diagnostic)
    actions = code_actions.code_action(
        server.ls,
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(diagnostics=[diagnostic], only=["quickfix"]),
        ),
    )
    assert actions is not None and [a.title for a in actions] == titles


CONFLICTING = HEADER + (
    "- Use pnpm for installs\n"  # 2
    "- keep it short\n"  # 3
    "- Never use pnpm for installs.\n"  # 4: conflicts with 2
    "- use tabs\n"  # 5: conflicts with the global note
)


async def test_quick_fixes_for_a_conflict(serve: Any) -> None:
    s = serve(CONFLICTING, HEADER + "- Never use tabs\n")
    diags = {d.range.start.line: d for d in s.diagnostics("conflict")}
    warning, information = lsp.DiagnosticSeverity.Warning, lsp.DiagnosticSeverity.Information
    assert {line: d.severity for line, d in diags.items()} == {
        2: warning,
        4: warning,
        5: information,
    }
    assert diags[2].data == {  # the notes' texts stay on the server (WIRE_TEXTS)
        "code": "conflict",
        "line": 2,
        "noteHash": note_hash("Use pnpm for installs"),
        "otherLine": 4,
        "scope": "project",
        "otherScope": "project",
        "subject": "pnpm",
    }
    acts = s.actions(2, diagnostics=[diags[2]], only=["quickfix"])
    assert _titles(acts) == [
        ("Forget this note: “Use pnpm for installs”", "quickfix", False),
        ("Forget the other note: “Never use pnpm for installs.”", "quickfix", False),
        (
            "Merge the two notes: “Never use pnpm for installs (was: Use pnpm for installs)”",
            "quickfix",
            False,
        ),
    ]
    assert [_notes(s.applied(a)) for a in acts] == [
        ["keep it short", "Never use pnpm for installs.", "use tabs"],
        ["Use pnpm for installs", "keep it short", "use tabs"],
        ["Never use pnpm for installs (was: Use pnpm for installs)", "keep it short", "use tabs"],
    ]
    acts = s.actions(5, diagnostics=[diags[5]], only=["quickfix"])
    assert _titles(acts) == [
        ("Forget this note (the global note then applies here)", "quickfix", False),
        ("Forget the global note, in every project: “Never use tabs”", "quickfix", False),
    ]
    assert _notes(s.applied(acts[0]))[-1] == "Never use pnpm for installs."
    # The global store is another file: the server's command writes it, not an edit.
    assert acts[1].edit is None and acts[1].command is not None
    assert acts[1].command.command == "memory.forget"
    assert acts[1].command.arguments == [
        {"text": "Never use tabs", "scope": "global", "uri": s.uri}
    ]


LONG = "run the integration tests before every push" + " with care" * 25  # 293 characters


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
@pytest.mark.parametrize("code", ["duplicate", "similar"])
async def test_a_near_duplicate_merge_over_the_note_limit_is_shown_refused_or_left_out(
    server: Any, preset: str, code: str
) -> None:
    """Merging two notes of ~290 characters would write one of ~580, which the store
    refuses (SPEC §2): a client that shows disabled actions gets the merge greyed out
    with why, others do not get it; keeping either wording is still offered. The same
    for merging selected notes."""
    later = LONG.upper() + "." if code == "duplicate" else LONG.replace("every", "each")
    server.workspace.write("project", [LONG, later])
    await server.initialize(preset)
    uri = server.open(server.workspace.project_store)
    data = {"code": code, "line": 3, "note": later, "first": LONG, "firstLine": 2}
    data |= {"exact": False} if code == "duplicate" else {"score": 97.0}
    s = Served(server.ls, uri)
    actions = s.actions(3, diagnostics=[_diagnostic(code, 3, data)], only=["quickfix"])
    selected = s.actions(2, 3, only=["refactor.rewrite"])
    titles = [a.title.split("“")[0] for a in actions]
    if preset == "visual-studio-code":
        assert titles == ["Keep ", "Keep ", "Merge into "]
        for merge in (actions[2], *selected):
            assert merge.edit is None and merge.command is None
            assert merge.disabled is not None and "longer than 500" in merge.disabled.reason
        assert [a.title for a in selected] == ["Merge the 2 selected notes"]
    else:
        assert titles == ["Keep ", "Keep "] and selected == []
    assert all(a.edit is not None for a in actions[:2])


@pytest.mark.parametrize("client", ["vscode", "neovim-0.7", "emacs"])
async def test_each_of_several_conflicts_on_a_line_gets_the_fixes_of_its_own_pair(
    serve: Any, client: str
) -> None:
    """A note in two ``conflict`` pairs has two diagnostics on its line, alike but for
    the other note: each sent back (lean data; byte columns; no data at all) gets the
    fixes that name its own other note, never the first pair's."""
    s = serve(
        HEADER
        + "- use pnpm for installs — 😀\n"  # 2: conflicts with 3 and 4
        + "- Never use pnpm for installs.\n"
        + "- do not use pnpm for installs\n"
    )
    pair = [d for d in s.diagnostics("conflict") if d.range.start.line == 2]
    assert len(pair) == 2
    for diag, other in zip(
        pair, ["Never use pnpm for installs.", "do not use pnpm for installs"], strict=True
    ):
        assert other in diag.message
        if client == "neovim-0.7":  # columns in bytes: the dash is 3, the emoji 4 (UTF-16: 1, 2)
            end = lsp.Position(2, diag.range.end.character + 4)
            diag = attrs.evolve(diag, range=lsp.Range(start=diag.range.start, end=end))
        elif client == "emacs":
            diag = attrs.evolve(diag, data=None)
        titles = [a.title for a in s.actions(2, diagnostics=[diag], only=["quickfix"])]
        assert f"Forget the other note: “{other}”" in titles, titles
        assert len(titles) == 3, titles
