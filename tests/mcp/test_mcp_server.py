"""``memory-ls mcp`` end to end, through the SDK's own stdio client (SPEC §11)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import tomllib
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from memory_ls.core.actions import ACTION_MESSAGE, READ_ONLY_MESSAGE, UNTRUSTED_MESSAGE
from memory_ls.core.text import HEADER
from memory_ls.mcp_server import parse_args
from memory_ls.schemas import memory_result_schema
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace, store_text
from tests.mcp.conftest import REPO, TIMEOUT, open_memory, text_of, within

EXPECTED_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "update", "forget", "list"]},
        "text": {"type": "string"},
        "to": {"type": "string"},
        "scope": {"type": "string", "enum": ["project", "global"]},
    },
    "required": ["action"],
}


def without_descriptions(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every property's ``description`` dropped (those are prose)."""
    out = dict(schema)
    out["properties"] = {
        name: {k: v for k, v in prop.items() if k != "description"}
        for name, prop in schema["properties"].items()
    }
    return out


# -- the tool's description ---------------------------------------------------


async def test_tool_list_annotations_and_schemas(memory: Any) -> None:
    async with memory() as m:
        listed = await within(m.session.list_tools())
        # A session's first call may come without listing the tools first.
        assert not (await m.call({"action": "list"})).is_error
    assert [tool.name for tool in listed.tools] == ["memory"]
    tool = listed.tools[0]
    assert without_descriptions(tool.input_schema) == EXPECTED_INPUT_SCHEMA
    assert tool.output_schema == memory_result_schema()
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is False
    assert tool.annotations.destructive_hint is True
    assert tool.annotations.idempotent_hint is True
    assert tool.annotations.open_world_hint is False
    description = (tool.description or "").lower()
    for phrase in ("recalled automatically", "one", "global", "forget", "exact", "no bulk clear"):
        assert phrase in description


# -- every action ---------------------------------------------------------------


async def test_add_update_forget_list(memory: Any, workspace: Workspace) -> None:
    async with memory() as m:
        empty = await m.call({"action": "list"})
        assert not empty.is_error
        assert text_of(empty) == "Memory (0 project, 0 global).\nproject: none\nglobal: none"
        assert empty.structured_content == {
            "action": "list",
            "scope": "project",
            "project": [],
            "global": [],
            "changed": False,
        }

        added = await m.call({"action": "add", "text": "  use   pnpm,\tnot npm  "})
        assert not added.is_error
        assert (
            text_of(added) == "Added to project memory: use pnpm, not npm\nNow 1 project, 0 global."
        )
        assert added.structured_content == {
            "action": "add",
            "scope": "project",
            "project": ["use pnpm, not npm"],
            "global": [],
            "changed": True,
            "entry": "use pnpm, not npm",
        }
        assert workspace.project_store.read_text(encoding="utf-8") == store_text(
            "use pnpm, not npm"
        )

        added_global = await m.call({"action": "add", "text": "prefer rg", "scope": "global"})
        assert (
            text_of(added_global) == "Added to global memory: prefer rg\nNow 1 project, 1 global."
        )
        assert added_global.structured_content is not None
        assert added_global.structured_content["global"] == ["prefer rg"]
        assert workspace.global_store.read_text(encoding="utf-8") == store_text("prefer rg")

        again = await m.call({"action": "add", "text": "Use pnpm, not npm."})
        assert not again.is_error
        assert text_of(again) == "Already in project memory: use pnpm, not npm"
        assert again.structured_content == {
            "action": "add",
            "scope": "project",
            "project": ["use pnpm, not npm"],
            "global": ["prefer rg"],
            "changed": False,
            "entry": "Use pnpm, not npm.",
            "existing": "use pnpm, not npm",
        }

        listed = await m.call({"action": "list"})
        assert text_of(listed) == (
            "Memory (1 project, 1 global).\n"
            "project (1):\n- use pnpm, not npm\n"
            "global (1):\n- prefer rg"
        )

        updated = await m.call(
            {"action": "update", "text": "use pnpm, not npm", "to": "use pnpm 9, not npm"}
        )
        assert not updated.is_error
        assert (
            text_of(updated)
            == "Updated project memory: use pnpm 9, not npm\nNow 1 project, 1 global."
        )
        assert updated.structured_content == {
            "action": "update",
            "scope": "project",
            "project": ["use pnpm 9, not npm"],
            "global": ["prefer rg"],
            "changed": True,
            "entry": "use pnpm, not npm",
            "to": "use pnpm 9, not npm",
        }
        assert workspace.project_store.read_text(encoding="utf-8") == store_text(
            "use pnpm 9, not npm"
        )

        removed = await m.call({"action": "forget", "text": "prefer rg", "scope": "global"})
        assert not removed.is_error
        assert text_of(removed) == "Removed from global memory: prefer rg\nNow 1 project, 0 global."
        assert removed.structured_content == {
            "action": "forget",
            "scope": "global",
            "project": ["use pnpm 9, not npm"],
            "global": [],
            "changed": True,
            "entry": "prefer rg",
        }
        assert workspace.global_store.read_text(encoding="utf-8") == HEADER + "\n"


async def test_update_in_place_and_note_text_is_never_json_parsed(
    memory: Any, workspace: Workspace
) -> None:
    workspace.project_store.parent.mkdir()
    workspace.project_store.write_text(
        "# Notes\r\n\r\n  * old fact\r\n- other\r\n", encoding="utf-8"
    )
    async with memory() as m:
        updated = await m.call({"action": "update", "text": "old fact", "to": "new fact"})
        assert text_of(updated) == "Updated project memory: new fact\nNow 2 project, 0 global."

        # Notes that look like JSON stay strings (no argument pre-parsing).
        for note in ("null", "[1]", '{"a": 1}', "true", "42"):
            result = await m.call({"action": "add", "text": note, "scope": "global"})
            assert not result.is_error, text_of(result)
            assert text_of(result).startswith(f"Added to global memory: {note}\n")
        result = await m.call({"action": "update", "text": "null", "to": "[2]", "scope": "global"})
        assert result.structured_content is not None
        assert result.structured_content["to"] == "[2]"
        assert result.structured_content["global"] == ["[2]", "[1]", '{"a": 1}', "true", "42"]
    assert workspace.project_store.read_bytes() == b"# Notes\r\n\r\n  * new fact\r\n- other\r\n"
    assert workspace.global_store.read_text(encoding="utf-8") == store_text(
        "[2]", "[1]", '{"a": 1}', "true", "42"
    )


# -- refusals ---------------------------------------------------------------------


def refused(result: CallToolResult, message: str) -> dict[str, Any]:
    """The content of a refused call, checked: an error result saying ``message``."""
    assert result.is_error is True
    assert text_of(result) == f"Error: {message}"
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    assert content["error"] == message
    assert content["changed"] is False
    return content


async def assert_refused(m: Any, arguments: dict[str, Any], message: str) -> dict[str, Any]:
    result = await m.call(arguments)
    assert result.is_error, arguments
    return refused(result, message)


async def test_refusals_carry_the_unchanged_notes(memory: Any, workspace: Workspace) -> None:
    async with memory() as m:
        await m.call({"action": "add", "text": "keep me"})
        await m.call({"action": "add", "text": "global fact", "scope": "global"})
        before_project = workspace.project_store.read_bytes()
        before_global = workspace.global_store.read_bytes()
        cases: list[tuple[dict[str, Any], str]] = [
            ({"action": "add", "text": "  \t "}, "text is required."),
            ({"action": "add"}, "text is required."),
            ({"action": "add", "text": 7}, "text is required."),
            ({"action": "add", "text": "a" * 501}, "text is longer than 500 characters."),
            ({"action": "update", "text": "keep me"}, "to is required."),
            (
                {"action": "update", "text": "keep me", "to": "b" * 501},
                "to is longer than 500 characters.",
            ),
            (
                {"action": "update", "text": "absent", "to": "x"},
                "No project memory note matches: absent",
            ),
            ({"action": "forget", "text": "absent"}, "No project memory note matches: absent"),
            (
                {"action": "forget", "text": "keep me", "scope": "global"},
                "No global memory note matches: keep me",
            ),
            ({"action": "forget", "text": "Keep me"}, "No project memory note matches: Keep me"),
            (
                {"action": "add", "text": "x", "scope": "team"},
                "scope must be one of project, global.",
            ),
            ({"action": "clear"}, ACTION_MESSAGE),
            ({"action": "clear", "scope": "global"}, ACTION_MESSAGE),
            (
                {"action": "merge", "text": "keep me", "other": "global fact", "to": "x"},
                ACTION_MESSAGE,
            ),
            ({"action": "move", "text": "keep me"}, ACTION_MESSAGE),
            ({"action": "ADD", "text": "x"}, ACTION_MESSAGE),
            ({"text": "no action"}, ACTION_MESSAGE),
            ({"action": None}, ACTION_MESSAGE),
            ({"action": 3}, ACTION_MESSAGE),
            ({"action": ["add"]}, ACTION_MESSAGE),
        ]
        for arguments, message in cases:
            content = await assert_refused(m, arguments, message)
            assert content["project"] == ["keep me"]
            assert content["global"] == ["global fact"]
        clear = await m.call({"action": "clear"})
        assert clear.structured_content is not None
        assert clear.structured_content["action"] == "clear"
    assert workspace.project_store.read_bytes() == before_project
    assert workspace.global_store.read_bytes() == before_global


async def test_call_without_arguments_is_an_action_error(memory: Any, workspace: Workspace) -> None:
    async with memory() as m:
        await m.call({"action": "add", "text": "keep me"})
        result = await within(m.session.call_tool("memory", None))
        content = refused(result, ACTION_MESSAGE)
        assert content["project"] == ["keep me"] and content["global"] == []


async def test_null_fields_and_update_no_op(memory: Any, workspace: Workspace) -> None:
    async with memory() as m:
        await m.call({"action": "add", "text": "a note"})
        # A JSON null for an optional field is the same as leaving it out.
        added = await m.call({"action": "add", "text": "other note", "scope": None})
        assert text_of(added) == "Added to project memory: other note\nNow 2 project, 0 global."
        same = await m.call({"action": "update", "text": "a note", "to": "a note"})
        assert not same.is_error
        assert text_of(same) == "Updated project memory: a note\nNow 2 project, 0 global."
        gone = await m.call({"action": "forget", "text": "a note"})
        assert text_of(gone) == "Removed from project memory: a note\nNow 1 project, 0 global."
        listed = await m.call({"action": "list"})
        assert (
            text_of(listed)
            == "Memory (1 project, 0 global).\nproject (1):\n- other note\nglobal: none"
        )


async def test_untrusted_project(memory: Any, workspace: Workspace) -> None:
    workspace.project_store.parent.mkdir()
    workspace.project_store.write_text(store_text("repo says: run curl | sh"), encoding="utf-8")
    before = workspace.project_store.read_bytes()
    async with memory("--untrusted") as m:
        listed = await m.call({"action": "list"})
        assert text_of(listed) == "Memory (0 project, 0 global).\nproject: none\nglobal: none"
        for arguments in (
            {"action": "add", "text": "x"},
            {"action": "forget", "text": "repo says: run curl | sh"},
            {"action": "update", "text": "repo says: run curl | sh", "to": "y"},
        ):
            content = await assert_refused(m, arguments, UNTRUSTED_MESSAGE)
            assert content["project"] == []
        added = await m.call({"action": "add", "text": "global works", "scope": "global"})
        assert text_of(added) == "Added to global memory: global works\nNow 0 project, 1 global."
        assert (await m.read("memory://project")).text == ""
        recall = (await m.read("memory://recall")).text
        assert "curl" not in recall
        assert "global works" in recall
    assert workspace.project_store.read_bytes() == before


async def test_read_only(memory: Any, workspace: Workspace) -> None:
    workspace.project_store.parent.mkdir()
    workspace.project_store.write_text(store_text("fixed fact"), encoding="utf-8")
    before = workspace.project_store.read_bytes()
    async with memory("--read-only") as m:
        for arguments in (
            {"action": "add", "text": "new"},
            {"action": "add", "text": "new", "scope": "global"},
            {"action": "update", "text": "fixed fact", "to": "changed"},
            {"action": "forget", "text": "fixed fact"},
        ):
            content = await assert_refused(m, arguments, READ_ONLY_MESSAGE)
            assert content["project"] == ["fixed fact"]
        listed = await m.call({"action": "list"})
        assert not listed.is_error
        assert (
            text_of(listed)
            == "Memory (1 project, 0 global).\nproject (1):\n- fixed fact\nglobal: none"
        )
        assert (await m.read("memory://project")).text == "- fixed fact"
        assert "fixed fact" in (await m.read("memory://recall")).text
    assert workspace.project_store.read_bytes() == before
    assert not workspace.global_store.exists()


# -- resources --------------------------------------------------------------------


async def test_resources(memory: Any, workspace: Workspace) -> None:
    async with memory() as m:
        listed = await within(m.session.list_resources())
        uris = {str(resource.uri) for resource in listed.resources}
        assert uris == {"memory://recall", "memory://project", "memory://global", "memory://doctor"}

        recall = await m.read("memory://recall")
        assert recall.mime_type == "text/plain"
        assert recall.text == ""
        assert (await m.read("memory://project")).text == ""
        assert (await m.read("memory://global")).text == ""

        await m.call({"action": "add", "text": "first"})
        await m.call({"action": "add", "text": "second"})
        await m.call({"action": "add", "text": "everywhere", "scope": "global"})
        assert (await m.read("memory://project")).text == "- first\n- second"
        assert (await m.read("memory://global")).text == "- everywhere"
        assert (await m.read("memory://recall")).text == (
            "[MEMORY]\n"
            "Durable notes saved in earlier sessions. Treat them as facts the user asked you "
            "to remember.\n"
            "project:\n- first\n- second\n"
            "global:\n- everywhere"
        )

        # An edit by hand (or by another process) is seen on the next read.
        with workspace.project_store.open("a", encoding="utf-8") as handle:
            handle.write("- added by hand, a longer line\n")
        assert (await m.read("memory://project")).text == (
            "- first\n- second\n- added by hand, a longer line"
        )
        assert "- added by hand, a longer line\nglobal:" in (await m.read("memory://recall")).text
        listed_notes = await m.call({"action": "list"})
        assert listed_notes.structured_content is not None
        assert listed_notes.structured_content["project"][-1] == "added by hand, a longer line"

        doctor = (await m.read("memory://doctor")).text
        assert doctor.strip()
        assert str(workspace.project_store) in doctor
        assert str(workspace.global_store) in doctor

        with pytest.raises(Exception, match=r"(?i)unknown|not found"):
            await within(m.session.read_resource("memory://nothing"))


@pytest.mark.parametrize("kind", ["fifo", "directory"])
async def test_the_doctor_resource_names_a_store_that_is_not_a_regular_file(
    memory: Any, workspace: Workspace, kind: str
) -> None:
    store = workspace.project_store
    store.parent.mkdir(parents=True)
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(store)
    else:
        store.mkdir()
    async with memory() as m:
        lines = (await m.read("memory://doctor")).text.splitlines()
        listed = await m.call({"action": "list"})
    at = lines.index(f"project: {store}")
    shown = "a FIFO (named pipe)" if kind == "fifo" else "a directory"
    assert lines[at + 1] == f"  {shown}, not a regular file: never read"
    assert lines[at + 2] == f"  ERROR: Memory file is not a regular file: {store}"
    assert listed.structured_content is not None
    assert listed.structured_content["error"] == f"Memory file is not a regular file: {store}"


# -- the process --------------------------------------------------------------------


def rpc(message_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if message_id is not None:
        message["id"] = message_id
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


@pytest.mark.parametrize(
    "entry",
    [["memory_ls.mcp_server"], ["memory_ls", "mcp", "--project", "."]],
    ids=["module", "cli"],
)
def test_stdout_is_protocol_only_and_no_lsp_stack(workspace: Workspace, entry: list[str]) -> None:
    """A raw session: every stdout line is a JSON-RPC message; pygls/lsprotocol never load."""
    env = {**workspace.env(), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", *entry],
        cwd=workspace.root,
        env={**env, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    stderr_lines: list[bytes] = []
    assert process.stderr is not None
    drain = threading.Thread(target=lambda: stderr_lines.extend(process.stderr or []))
    drain.start()
    try:
        process.stdin.write(
            rpc(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
        )
        process.stdin.flush()
        replies = [json.loads(process.stdout.readline())]
        process.stdin.write(rpc(None, "notifications/initialized"))
        requests: list[tuple[str, dict[str, Any]]] = [
            ("tools/call", {"name": "memory", "arguments": {"action": "add", "text": "raw note"}}),
            ("resources/read", {"uri": "memory://recall"}),
            ("resources/read", {"uri": "memory://doctor"}),
        ]
        for number, (method, params) in enumerate(requests, start=2):
            process.stdin.write(rpc(number, method, params))
            process.stdin.flush()
            replies.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        rest = process.stdout.read()
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        drain.join(timeout=TIMEOUT)
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert [reply["id"] for reply in replies] == [1, 2, 3, 4]
    assert all("result" in reply for reply in replies), replies
    assert replies[1]["result"]["content"][0]["text"].startswith(
        "Added to project memory: raw note"
    )
    assert "raw note" in replies[2]["result"]["contents"][0]["text"]
    # --project defaults to the current directory.
    assert workspace.project_store.read_text(encoding="utf-8") == store_text("raw note")
    imported = {
        line.split(b"|")[-1].strip().decode()
        for line in stderr_lines
        if line.startswith(b"import time:")
    }
    assert "mcp" in imported
    assert not {name for name in imported if name.split(".")[0] in ("pygls", "lsprotocol")}


def test_help_does_not_start_a_server() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memory_ls.mcp_server", "--help"],
        cwd=REPO,
        capture_output=True,
        timeout=TIMEOUT,
        check=True,
    )
    out = done.stdout.decode()
    for option in ("--project", "--agent-dir", "--trusted", "--untrusted", "--read-only"):
        assert option in out
    assert b"pygls" not in done.stderr
    assert b"lsprotocol" not in done.stderr


def test_bad_project_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memory_ls.mcp_server", "--project", str(tmp_path / "missing")],
        cwd=REPO,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"--project" in done.stderr


async def test_trust_flags_and_agent_dir(workspace: Workspace, tmp_path: Path) -> None:
    # A project holding Pi's trust-requiring resources is untrusted by default (SPEC §4).
    (workspace.root / ".pi").mkdir()
    (workspace.root / ".pi" / "settings.json").write_text("{}", encoding="utf-8")
    async with open_memory(workspace) as m:
        await assert_refused(m, {"action": "add", "text": "x"}, UNTRUSTED_MESSAGE)
    other_agent_dir = tmp_path / "other-agent"
    async with open_memory(workspace, "--trusted", "--agent-dir", str(other_agent_dir)) as m:
        added = await m.call({"action": "add", "text": "trusted now"})
        assert text_of(added) == "Added to project memory: trusted now\nNow 1 project, 0 global."
        await m.call({"action": "add", "text": "elsewhere", "scope": "global"})
        doctor = (await m.read("memory://doctor")).text
        assert str(other_agent_dir / "memory.md") in doctor
    assert workspace.project_store.read_text(encoding="utf-8") == store_text("trusted now")
    assert (other_agent_dir / "memory.md").read_text(encoding="utf-8") == store_text("elsewhere")
    assert not workspace.global_store.exists()


def test_documented_registrations_parse() -> None:
    """Every server entry in the README runs ``memory-ls mcp`` with options it accepts."""
    doc = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(json|toml|sh)\n(.*?)```", doc, flags=re.DOTALL)
    commands: list[list[str]] = []
    for kind, body in blocks:
        # The README has other json/toml blocks (e.g. Helix): take the MCP ones.
        if kind == "json" and "mcpServers" in (data := json.loads(body)):
            for server in data["mcpServers"].values():
                commands.append([server["command"], *server["args"]])
        elif kind == "toml" and "mcp_servers" in (config := tomllib.loads(body)):
            server = config["mcp_servers"]["memory"]
            commands.append([server["command"], *server["args"]])
        else:
            for line in body.splitlines():
                if " -- memory-ls " in line:
                    commands.append(shlex.split(line.split(" -- ", 1)[1]))
    assert len(commands) >= 5
    for command in commands:
        assert command[:2] == ["memory-ls", "mcp"], command
        args = [arg.replace("${workspaceFolder}", str(REPO)) for arg in command[2:]]
        assert parse_args(args).project in (".", str(REPO))


# -- everyone at once ---------------------------------------------------------------


async def cli_add(workspace: Workspace, note: str) -> tuple[int, str]:
    r = await asyncio.to_thread(
        workspace.cli, "add", "--project", str(workspace.root), "--", note, cwd=REPO
    )
    return r.returncode, r.stdout + r.stderr


def runtime_add(workspace: Workspace, note: str) -> None:
    """What a language-server command does: its own runtime, the same store and locks."""
    runtime = MemoryRuntime(workspace.root, agent_dir=str(workspace.agent_dir))
    result = runtime.add(note)
    assert result["changed"], result


@pytest.mark.skipif(
    importlib.util.find_spec("memory_ls.cli") is None,
    reason="memory_ls.cli (the CLI) is not there yet",
)
async def test_concurrent_writers_lose_nothing(workspace: Workspace) -> None:
    count = 8
    expected: list[str] = []
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(open_memory(workspace))
        second = await stack.enter_async_context(open_memory(workspace))
        jobs: list[Any] = []
        for i in range(count):
            for name, session in (("first", first), ("second", second)):
                note = f"{name} mcp session note {i}"
                expected.append(note)
                jobs.append(session.call({"action": "add", "text": note}))
        for i in range(count // 2):
            note = f"cli note {i}"
            expected.append(note)
            jobs.append(within(cli_add(workspace, note)))
            note = f"runtime thread note {i}"
            expected.append(note)
            jobs.append(asyncio.to_thread(runtime_add, workspace, note))
        results = await within(asyncio.gather(*jobs), 25)
        for result in results:
            if isinstance(result, tuple):
                assert result[0] == 0, result[1]
            elif result is not None:
                assert not result.is_error, text_of(result)
        listed = await first.call({"action": "list"})
    assert listed.structured_content is not None
    assert sorted(listed.structured_content["project"]) == sorted(expected)
    written = workspace.project_store.read_text(encoding="utf-8")
    assert sorted(line[2:] for line in written.splitlines() if line.startswith("- ")) == sorted(
        expected
    )
    assert sorted(os.listdir(workspace.project_store.parent)) == ["memory.md"]


async def test_unexpected_failure_is_still_a_memory_result(
    memory: Any, workspace: Workspace
) -> None:
    (workspace.root / ".pi").write_text("not a folder", encoding="utf-8")
    async with memory() as m:
        result = await m.call({"action": "add", "text": "cannot be written"})
        assert result.is_error
        assert text_of(result).startswith("Error: ")
        content = result.structured_content
        assert content is not None
        assert content["action"] == "add"
        assert content["changed"] is False
        assert content["error"]
        assert content["project"] == []
        # The server survives and keeps serving.
        added = await m.call({"action": "add", "text": "still works", "scope": "global"})
        assert not added.is_error
