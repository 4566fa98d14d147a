"""``memory_ls.store.project_files``: the walk of the project tree for SPEC §13, on real files."""

from __future__ import annotations

import pytest

from memory_ls.store import project_files
from memory_ls.store.project_files import walk_project
from tests.conftest import Workspace


def test_the_walk_stops_inside_one_huge_folder(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit was checked between folders only: one folder of millions of files was
    # listed whole. A small limit stands in for 200,000 so the folder can be small.
    monkeypatch.setattr(project_files, "MAX_WALK_ENTRIES", 100)
    crowd = workspace.root / "crowd"
    crowd.mkdir()
    for i in range(1000):
        (crowd / f"f{i}.txt").touch()
    _, paths = walk_project(workspace.root)
    assert len(paths) <= 100
