"""What an open file is, in process: the workspace maps the store layer's classification
(``store.paths.classify_store_path``) onto its projects (SPEC §7 Documents)."""

from __future__ import annotations

from pathlib import Path

from memory_ls.server.settings import Settings
from memory_ls.server.workspace import Projects
from tests.conftest import Workspace


def projects_for(workspace: Workspace) -> Projects:
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    return projects


def test_each_kind_of_file(workspace: Workspace) -> None:
    projects = projects_for(workspace)
    default = projects.default_runtime()
    info = projects.describe(workspace.global_store)
    assert info is not None and (info.runtime, info.scope) == (default, "global")
    info = projects.describe(workspace.project_store)
    assert info is not None and (info.runtime, info.scope) == (default, "project")
    below = workspace.root / "sub" / ".pi" / "memory.md"
    info = projects.describe(below)
    assert info is not None
    assert (info.runtime, info.scope, info.real_store) == (
        default,
        None,
        str(workspace.project_store),
    )
    assert projects.describe(workspace.root / "README.md") is None


def test_another_project_gets_its_own_runtime(workspace: Workspace, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    projects = projects_for(workspace)
    info = projects.describe(other / ".pi" / "memory.md")
    assert info is not None and info.scope == "project"
    assert info.runtime.project_root == other.resolve()
    assert info.runtime is not projects.default_runtime()


def test_a_refused_store_leading_to_the_agent_dir_stays_the_projects(
    workspace: Workspace,
) -> None:
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    projects = projects_for(workspace)
    info = projects.describe(workspace.project_store)
    assert info is not None and info.scope == "project"
    assert info.runtime.store_refusal("project") is not None
    # A command's uri naming it picks that project too; the global store picks the default.
    assert projects.runtime_for_uri_path(workspace.project_store) is info.runtime
    assert projects.runtime_for_uri_path(workspace.global_store) is projects.default_runtime()
