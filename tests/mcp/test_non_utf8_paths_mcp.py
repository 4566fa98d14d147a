"""``memory-ls mcp`` on a project whose folder name is not UTF-8 (``b"caf\\xe9"``).

The SDK writes every answer as strict UTF-8, so a lone surrogate (how Python
reads such a path) in a result or resource would stop it from answering. Every
tool result and resource passes through ``without_lone_surrogates``; paths in
messages are escaped by ``display_path`` (see tests/cli/test_non_utf8_paths.py).
"""

from __future__ import annotations

import os
import sys

import pytest

from memory_ls.core.text import HEADER, display_path
from tests.conftest import Workspace, new_project
from tests.mcp.conftest import open_memory, text_of

pytestmark = pytest.mark.skipif(
    sys.platform in ("win32", "darwin"), reason="the file system must take any bytes in a name"
)


async def test_the_tool_and_resources_answer_for_a_non_utf8_project(
    workspace: Workspace,
) -> None:
    root = new_project(workspace.root.parent / os.fsdecode(b"caf\xe9"))
    there = Workspace(root, workspace.agent_dir, workspace.home)
    async with open_memory(there) as m:
        added = await m.call({"action": "add", "text": "x"})
        assert not added.is_error
        assert text_of(added) == "Added to project memory: x\nNow 1 project, 0 global."
        listed = await m.call({"action": "list"})
        assert listed.structured_content is not None
        assert listed.structured_content["project"] == ["x"]
        doctor = (await m.read("memory://doctor")).text
        assert f"project: {display_path(there.project_store)}" in doctor
        assert "caf\\udce9" in doctor
        assert (await m.read("memory://project")).text == "- x"
        assert (await m.read("memory://recall")).text.endswith("project:\n- x")
    assert there.text("project") == f"{HEADER}\n\n- x\n"
