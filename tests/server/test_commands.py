"""The open-buffer rule of the ``memory.*`` commands (``server/commands.py``), in process.

A :class:`BufferChange` says what one command wrote to one store; ``target`` is the
text an open buffer should get: the file's new text for a buffer that matched the
file, the command's change applied to a buffer with unsaved edits, nothing for a
buffer that already holds the change (SPEC §7 Commands).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from memory_ls.core.actions import apply_add, apply_forget
from memory_ls.core.text import HEADER
from memory_ls.server import commands
from memory_ls.server.commands import BEHIND_MESSAGE, BufferChange, OpenBuffers, argument
from memory_ls.server.document_sync import did_change
from tests.conftest import store_text

from .conftest import InProcess

BEFORE = store_text("one", "two")
AFTER = store_text("one", "two", "three")


def add_three(file_text: str = AFTER) -> BufferChange:
    """``memory.add three`` on a store that held ``one`` and ``two``."""
    return BufferChange(
        "add", BEFORE, AFTER, lambda content: apply_add(content, "three"), lambda: file_text
    )


def test_a_buffer_that_matched_the_file_takes_the_new_file_text() -> None:
    assert add_three().target(BEFORE) == AFTER


def test_a_buffer_with_unsaved_edits_gets_the_change_applied_to_its_own_text() -> None:
    edited = BEFORE + "- typed, not saved\n"
    assert add_three().target(edited) == edited + "- three\n"


def test_a_buffer_that_holds_the_change_needs_nothing() -> None:
    change = add_three()
    assert change.target(AFTER) is None
    assert change.held_by(AFTER)
    # Typed by the user as well, in another place: the note is there, nothing to add.
    assert change.target(store_text("three", "one", "two")) is None


def test_a_buffer_equal_to_the_file_as_it_is_now_needs_nothing() -> None:
    """Another command wrote to the file since: the buffer that shows it holds this change."""
    later = store_text("one", "two", "three", "four")
    assert add_three(file_text=later).target(later) is None


def test_a_buffer_saved_over_the_change_holds_nothing_to_undo() -> None:
    """The buffer that lacked the change was saved (the user chose its text; or the same
    file open under another URI was): the file is the old text again."""
    assert add_three(file_text=BEFORE).target(BEFORE) is None
    assert add_three(file_text=BEFORE).held_by(BEFORE)


def test_a_change_that_no_longer_applies_counts_as_held() -> None:
    """The user deleted the note a ``forget`` removes: there is nothing to bring over."""
    change = BufferChange(
        "forget",
        BEFORE,
        store_text("two"),
        lambda content: apply_forget(content, "one", "project"),
        lambda: store_text("two"),
    )
    edited = f"{HEADER}\n\n- two\n- typed\n"
    assert change.target(edited) is None and change.held_by(edited)
    assert change.target(BEFORE + "- typed\n") == store_text("two", "typed")


def test_the_behind_message_names_the_command() -> None:
    assert add_three().behind_message == BEHIND_MESSAGE.format(command="add")
    assert "memory.add" in add_three().behind_message


# -- arguments --------------------------------------------------------------------------


def test_no_argument_is_an_empty_object() -> None:
    assert argument("memory.list", ()) == {}


def test_the_first_argument_is_the_object() -> None:
    assert argument("memory.add", ({"text": "x"}, "ignored")) == {"text": "x"}


@pytest.mark.parametrize("value", [None, 5, "x", [1], True])
def test_an_argument_that_is_not_an_object_is_invalid_params(value: object) -> None:
    with pytest.raises(JsonRpcInvalidParams) as raised:
        argument("memory.add", (value,))
    assert f"memory.add takes one JSON object argument, not {type(value).__name__}." in str(
        raised.value
    )


NOT_STRINGS = [42, 1.5, True, ["file:///elsewhere"], {"uri": "file:///elsewhere"}]
"""Field values a JSON client may send where a string belongs."""


@pytest.mark.parametrize("uri", NOT_STRINGS)
@pytest.mark.parametrize(
    "command, arg",
    [
        ("memory.forget", {"text": "one"}),
        ("memory.add", {"text": "two"}),
        ("memory.list", {}),
        ("memory.clear", {}),
        ("memory.propose", {"action": "forget", "text": "one"}),
        ("memory.accept", {"all": True}),
    ],
)
async def test_a_uri_that_is_not_a_string_is_refused_not_ignored(
    server: InProcess, command: str, arg: dict[str, object], uri: object
) -> None:
    """Ignored, it ran the command on the first workspace folder's store instead of the
    project its caller meant (``memory.forget`` removed a note there)."""
    server.workspace.write("project", ["one"])
    await server.initialize()
    result = await commands.execute(server.ls, command, ({**arg, "uri": uri},))
    assert result["error"] == commands.URI_MESSAGE
    assert result["changed"] is False and result["project"] == []
    assert server.workspace.text("project") == store_text("one")
    assert not (server.workspace.root / ".pi" / "memory.inbox.jsonl").exists()


async def test_a_null_uri_is_no_uri(server: InProcess) -> None:
    server.workspace.write("project", ["one"])
    await server.initialize()
    result = await commands.execute(server.ls, "memory.forget", ({"text": "one", "uri": None},))
    assert "error" not in result and result["changed"] is True


@pytest.mark.parametrize("by", NOT_STRINGS)
async def test_a_by_that_is_not_a_string_is_refused(server: InProcess, by: object) -> None:
    """``by`` names who proposes (SPEC §12); a number was silently replaced by the
    client's name."""
    from memory_ls.core.inbox import BY_MESSAGE

    server.workspace.write("project", ["one"])
    (server.workspace.root / "notes.md").write_text("- two\n", encoding="utf-8")
    await server.initialize()
    propose = {"action": "add", "text": "two", "by": by}
    result = await commands.execute(server.ls, "memory.propose", (propose,))
    assert result["error"] == BY_MESSAGE and result["action"] == "add"
    assert result["changed"] is False and "proposal" not in result
    imported = {"files": ["notes.md"], "propose": True, "by": by}
    result = await commands.execute(server.ls, "memory.import", (imported,))
    assert result == {"added": [], "skipped": [], "refused": [], "error": BY_MESSAGE}
    assert not (server.workspace.root / ".pi" / "memory.inbox.jsonl").exists()


# -- turns: commands on one store are ordered -----------------------------------------------


async def test_commands_on_one_store_take_turns_and_others_do_not_wait(tmp_path: Path) -> None:
    buffers = OpenBuffers()
    store, other = tmp_path / "a" / "memory.md", tmp_path / "b" / "memory.md"
    order: list[str] = []
    first_holds = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with buffers.turn([store]):
            order.append("first in")
            first_holds.set()
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with buffers.turn([store]):
            order.append("second in")

    async def elsewhere() -> None:
        async with buffers.turn([other]):
            order.append("elsewhere")

    one = asyncio.ensure_future(first())
    await first_holds.wait()
    two = asyncio.ensure_future(second())
    await asyncio.wait_for(elsewhere(), 1)  # another store does not wait for the first
    await asyncio.sleep(0.01)
    assert order == ["first in", "elsewhere"]
    release.set()
    await asyncio.wait_for(asyncio.gather(one, two), 1)
    assert order == ["first in", "elsewhere", "first out", "second in"]


async def test_a_move_holding_both_stores_cannot_deadlock(tmp_path: Path) -> None:
    """Locks are taken in one order, whatever order a command names its stores in.

    While ``a`` is busy, one move waits for ``a`` then ``b``, the other names ``b``
    first: taken in that order it would hold ``b`` and wait for ``a`` forever.
    """
    buffers = OpenBuffers()
    a, b = tmp_path / "a" / "memory.md", tmp_path / "b" / "memory.md"
    busy = asyncio.Event()
    release = asyncio.Event()
    done: list[str] = []

    async def hold_a() -> None:
        async with buffers.turn([a]):
            busy.set()
            await release.wait()

    async def move(name: str, paths: list[Path]) -> None:
        async with buffers.turn(paths):
            done.append(name)

    holder = asyncio.ensure_future(hold_a())
    await busy.wait()
    moves = [asyncio.ensure_future(move("ab", [a, b])), asyncio.ensure_future(move("ba", [b, a]))]
    await asyncio.sleep(0.01)
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, *moves), 1)
    assert done == ["ab", "ba"]


async def test_a_waiting_command_wakes_on_the_buffers_change() -> None:
    buffers = OpenBuffers()
    state = {"held": False}

    async def change_later() -> None:
        await asyncio.sleep(0.01)
        state["held"] = True
        buffers.changed("file:///s/.pi/memory.md")

    changer = asyncio.ensure_future(change_later())
    assert await buffers.wait("file:///s/.pi/memory.md", lambda: state["held"], 1.0)
    assert not await buffers.wait("file:///s/.pi/memory.md", lambda: False, 0.02)
    await changer


# -- a command and an open buffer, in process ------------------------------------------------


async def test_a_buffer_the_client_will_not_update_is_behind_until_it_holds_the_change(
    server: InProcess,
) -> None:
    """The in-process client refuses every ``workspace/applyEdit``."""
    server.workspace.write("project", ["one"])
    await server.initialize()
    uri = server.open(server.workspace.project_store)
    result = await commands.execute(server.ls, "memory.add", ({"text": "two"},))
    assert result["changed"] is True and result["project"] == ["one", "two"]
    asked = server.client.requests(lsp.WORKSPACE_APPLY_EDIT)
    assert len(asked) == 2  # once, and once more against the buffer's text after the refusal
    for params in asked:
        assert params["label"] == "memory.add"
        [change] = params["edit"]["documentChanges"]
        assert change["textDocument"] == {"uri": uri, "version": 1}
        assert [e["newText"] for e in change["edits"]] == ["- two\n"]
    behind = BEHIND_MESSAGE.format(command="add")
    assert server.ls.analysis.states[uri].behind == [behind]
    shown = server.client.notifications(lsp.WINDOW_SHOW_MESSAGE)
    assert [(m["type"], m["message"]) for m in shown] == [
        (lsp.MessageType.Warning, f"{server.workspace.project_store}: {behind}")
    ]
    # The user reverts the buffer: it holds the change now, and is no longer behind.
    did_change(
        server.ls,
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                lsp.TextDocumentContentChangeWholeDocument(text=store_text("one", "two"))
            ],
        ),
    )
    assert server.ls.analysis.states[uri].behind == []


def test_a_sync_reaches_a_buffer_with_unsaved_edits_note_by_note() -> None:
    """memory.sync's change, replayed on a dirty buffer: what arrived is merged into its text."""
    before = store_text("a", "b")
    after = store_text("a", "b", "arrived")  # what the pull wrote to the file
    buffer = store_text("a", "b", "typed, not saved")
    change = BufferChange(
        "sync",
        before,
        after,
        lambda text: commands._merged_into(before, after, text),
        lambda: after,
    )
    assert change.target(before) == after
    assert change.target(buffer) == store_text("a", "b", "typed, not saved", "arrived")
    assert change.held_by(store_text("a", "b", "typed, not saved", "arrived"))


class _Held:
    """An argument of a command's work (a runtime, a document, in the server)."""


async def test_the_work_of_a_command_that_failed_is_freed_without_a_collection() -> None:
    """A command's work that raised in its thread leaves no cycle: what it was given is
    freed by its count once the error is handled."""
    import gc
    import weakref

    def fails(held: _Held) -> None:
        raise ValueError("refused")

    held = _Held()
    gone = weakref.ref(held)
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:  # (not pytest.raises: its record of the error would keep it)
            await commands.in_thread(fails, held)
        except ValueError as exc:
            assert str(exc) == "refused"
        else:
            raise AssertionError("no error")
        del held
        for _ in range(100):  # (the worker thread leaves its frame)
            if gone() is None:
                break
            await asyncio.sleep(0.02)
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


async def test_memory_doctor_says_a_read_only_store_would_not_be_written(
    server: InProcess,
) -> None:
    """As the CLI's and MCP's doctor do: before the add it refuses."""
    from memory_ls.store.files import read_only_message

    store = server.workspace.write("global", ["a"])
    store.chmod(0o444)
    await server.initialize()
    added = await commands.execute(server.ls, "memory.add", ({"text": "b", "scope": "global"},))
    assert added["error"] == read_only_message(store)
    report = await commands.execute(server.ls, "memory.doctor", ())
    assert report["global"]["readOnlyReason"] == read_only_message(store)
    assert f"read-only: {read_only_message(store)}" in report["text"]


# -- modules imported at first use (issue 11's cold start) ------------------------------------


def _unimportable(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``import name`` raises from now on (``None`` in ``sys.modules``)."""
    parent, _, child = name.rpartition(".")
    monkeypatch.delattr(sys.modules[parent], child, raising=False)
    monkeypatch.setitem(sys.modules, name, None)


async def _first_uses(server: InProcess, uri: str) -> dict[str, dict[str, Any]]:
    """The raw answers of a code action, a format, ``memory.sync`` and ``memory.import``."""
    whole = lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(4, 0))
    document = lsp.TextDocumentIdentifier(uri=uri)
    answers = {
        "action": await server.client.request(
            lsp.TEXT_DOCUMENT_CODE_ACTION,
            lsp.CodeActionParams(document, whole, lsp.CodeActionContext(diagnostics=[])),
        ),
        "format": await server.client.request(
            lsp.TEXT_DOCUMENT_FORMATTING,
            lsp.DocumentFormattingParams(document, lsp.FormattingOptions(2, True)),
        ),
    }
    for command, arg in [("sync", {"scope": "global"}), ("import", {"files": ["notes.md"]})]:
        answers[command] = await server.client.request(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command=f"memory.{command}", arguments=[arg]),
        )
    return answers


@pytest.mark.parametrize(
    ("module", "users"),
    [
        ("memory_ls.core.fixes", {"action", "format"}),
        ("memory_ls.store.git", {"sync"}),
        ("memory_ls.store.bridges", {"import"}),
    ],
)
async def test_a_module_that_fails_to_import_at_first_use_is_an_error_answer(
    server: InProcess, monkeypatch: pytest.MonkeyPatch, module: str, users: set[str]
) -> None:
    """The requests that import it are answered with an error, the others as ever, and the
    server answers them all once it imports (nothing written by a failed ``memory.import``)."""
    server.workspace.write("project", ["one", "*  two"])
    (server.workspace.root / "notes.md").write_text("- three\n", encoding="utf-8")
    await server.initialize()
    uri = server.open(server.workspace.project_store)
    with monkeypatch.context() as patched:
        _unimportable(patched, module)
        failed = await _first_uses(server, uri)
    assert {name for name, answer in failed.items() if "error" in answer} == users
    assert all(
        module in answer["error"]["message"] for answer in failed.values() if "error" in answer
    )
    again = await _first_uses(server, uri)
    assert all("result" in answer for answer in again.values()), again
    imported = "import" in users
    assert again["import"]["result"]["added" if imported else "skipped"] == ["three"]
