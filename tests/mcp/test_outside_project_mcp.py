"""The MCP server refuses a project whose ``.pi`` resolves outside it (SPEC §1, §11)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_ls.core.text import HEADER
from tests.conftest import Workspace
from tests.mcp.conftest import text_of

GLOBAL_TEXT = f"{HEADER}\n\n- global note\n"


def message_for(workspace: Workspace) -> str:
    return (
        f"Refusing to use {workspace.root}/.pi: it resolves outside the project "
        f"({workspace.agent_dir})."
    )


async def refuses_project_writes(m: Any, message: str, global_note: str) -> None:
    """An add, a forget and an update of the project scope are each refused with
    ``message``, and the answer shows the one global note and no project notes."""
    for arguments in (
        {"action": "add", "text": "planted"},
        {"action": "forget", "text": global_note},
        {"action": "update", "text": global_note, "to": "changed"},
    ):
        result = await m.call(arguments)
        assert result.is_error, arguments
        assert text_of(result) == f"Error: {message}"
        content = result.structured_content
        assert content is not None
        assert content["error"] == message
        assert (content["project"], content["global"]) == ([], [global_note])


@pytest.mark.parametrize("trust", [[], ["--trusted"]])
async def test_a_pi_symlinked_to_the_agent_dir_is_refused(
    memory: Any, workspace: Workspace, trust: list[str]
) -> None:
    workspace.global_store.write_text(GLOBAL_TEXT, encoding="utf-8")
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    message = message_for(workspace)
    async with memory(*trust) as m:
        await refuses_project_writes(m, message, "global note")
        listed = await m.call({"action": "list"})
        assert listed.structured_content is not None
        assert listed.structured_content["error"] == message
        assert listed.structured_content["project"] == []
        assert (await m.read("memory://project")).text == ""
        recall = (await m.read("memory://recall")).text
        assert "project:" not in recall and recall.count("- global note") == 1
        assert f"project: {message}" in (await m.read("memory://doctor")).text
    assert workspace.global_store.read_text(encoding="utf-8") == GLOBAL_TEXT
    assert sorted(p.name for p in workspace.agent_dir.iterdir()) == ["memory.md"]


async def test_an_agent_dir_in_the_projects_pi_refuses_the_project_scope(
    memory: Any, workspace: Workspace
) -> None:
    """SPEC §1: the scopes never become one file, also when ``--agent-dir`` names the
    project's ``.pi``: the project scope is refused, the file stays global memory."""
    pi = workspace.root / ".pi"
    store = workspace.write("project", ["shared note"])
    before = store.read_text(encoding="utf-8")
    message = (
        f"Refusing to use {pi}: its memory.md is the global memory file ({store}); "
        "project and global memory must be two files."
    )
    async with memory("--agent-dir", str(pi), "--trusted") as m:
        await refuses_project_writes(m, message, "shared note")
        assert store.read_text(encoding="utf-8") == before
        added = await m.call({"action": "add", "text": "global note", "scope": "global"})
        assert not added.is_error
        assert text_of(added) == "Added to global memory: global note\nNow 0 project, 2 global."
        listed = await m.call({"action": "list"})
        assert listed.structured_content is not None
        assert listed.structured_content["error"] == message
        assert (await m.read("memory://project")).text == ""
        recall = (await m.read("memory://recall")).text
        assert "project:" not in recall and recall.count("- shared note") == 1
        assert f"project: {message}" in (await m.read("memory://doctor")).text
    assert store.read_text(encoding="utf-8") == f"{before}- global note\n"


async def test_a_project_named_inside_its_pi_that_leads_out_is_refused(
    memory: Any, workspace: Workspace
) -> None:
    """``--project <root>/.pi``, where that ``.pi`` leads to the agent dir, names the
    project whose store is refused, not a project in the agent dir to create a store in."""
    workspace.global_store.write_text(GLOBAL_TEXT, encoding="utf-8")
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    async with memory("--project", str(workspace.root / ".pi"), "--trusted") as m:
        await refuses_project_writes(m, message_for(workspace), "global note")
    assert sorted(p.name for p in workspace.agent_dir.iterdir()) == ["memory.md"]


async def test_a_project_named_deeper_in_its_pi_that_leads_out_is_refused(
    memory: Any, workspace: Workspace
) -> None:
    """``--project <root>/.pi/x`` where ``<root>/.pi`` leads to the agent dir and ``x`` is
    a repository in it (with a store): this project's refusal, as the editor and ``check``
    judge ``<root>/.pi/x/.pi/memory.md``; never the project out there."""
    workspace.global_store.write_text(GLOBAL_TEXT, encoding="utf-8")
    far = workspace.agent_dir / "x"
    (far / ".git").mkdir(parents=True)
    (far / ".pi").mkdir()
    (far / ".pi" / "memory.md").write_text(f"{HEADER}\n\n- far note\n", encoding="utf-8")
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    async with memory("--project", str(workspace.root / ".pi" / "x"), "--trusted") as m:
        await refuses_project_writes(m, message_for(workspace), "global note")
    assert (far / ".pi" / "memory.md").read_text(encoding="utf-8").endswith("- far note\n")


async def test_an_agent_dir_that_is_a_pi_leading_out_is_global_memory(
    memory: Any, workspace: Workspace, tmp_path: Any
) -> None:
    """``--agent-dir <root>/.pi`` where that ``.pi`` leads out of the project: the file is
    global memory (the agent dir is the user's choice), the project scope is refused with
    the ``.pi``'s own refusal, and the doctor lists the one ``bytefly.json`` once, as the
    global layer (it listed it again as an ignored project layer, a second problem)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "memory.md").write_text(GLOBAL_TEXT, encoding="utf-8")
    (elsewhere / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 600}}')
    pi = workspace.root / ".pi"
    pi.symlink_to(elsewhere)
    message = f"Refusing to use {pi}: it resolves outside the project ({elsewhere.resolve()})."
    async with memory("--agent-dir", str(pi), "--trusted") as m:
        await refuses_project_writes(m, message, "global note")
        added = await m.call({"action": "add", "text": "second", "scope": "global"})
        assert not added.is_error
        assert text_of(added) == "Added to global memory: second\nNow 0 project, 2 global."
        recall = (await m.read("memory://recall")).text
        assert "project:" not in recall and recall.count("- global note") == 1
        doctor = (await m.read("memory://doctor")).text
        assert doctor.count("bytefly.json") == 1, doctor
        assert "maxInjectBytes=600" in doctor
        assert f"project: {message}" in doctor
    assert (elsewhere / "memory.md").read_text(encoding="utf-8") == f"{GLOBAL_TEXT}- second\n"
