"""The package as a user installs it (SPEC §16): ``python -m build``'s sdist and wheel,
the wheel installed into a fresh virtual environment outside the checkout (no editable
install), and every kind of use run against that installation — the verbs, the
language server's ``initialize`` and the MCP server's. A file missing from the wheel
(a module, ``py.typed``, a schema) fails here, not on a user's machine.

The wheel's dependencies come from pip's own configuration (``/etc/pip.conf``,
``/etc/xdg/pip``, ``PIP_*``), the same index ``make`` installed ``.venv`` from: the
test adds no index of its own. One build and one installation serve the whole module.
``pipx install`` and ``uv tool install`` of the same wheel are checked too, with pipx
and uv installed from that index into a scratch venv.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Workspace

from .conftest import REPO, in_ci, lsp_initialize, mcp_initialize, outside_env, run

pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Dist:
    """What ``python -m build`` made: the sdist and the wheel."""

    sdist: Path
    wheel: Path
    version: str


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """``python -m build`` of the checkout (sdist, then the wheel built from that sdist)."""
    out = tmp_path_factory.mktemp("dist")
    proc = run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], timeout=300)
    assert proc.returncode == 0, (
        f"python -m build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    wheels = sorted(out.glob("memory_ls-*-py3-none-any.whl"))
    sdists = sorted(out.glob("memory_ls-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    version = wheels[0].name.split("-")[1]
    return Dist(sdist=sdists[0], wheel=wheels[0], version=version)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dist: Dist) -> Path:
    """A fresh venv outside the checkout with the wheel (not the checkout) installed."""
    folder = tmp_path_factory.mktemp("wheel-venv") / "venv"
    made = run([sys.executable, "-m", "venv", str(folder)], timeout=120)
    assert made.returncode == 0, made.stderr
    installed = run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", str(dist.wheel)],
        cwd=folder.parent,
        timeout=600,
    )
    assert installed.returncode == 0, (
        f"pip install of the wheel failed:\n{installed.stderr[-3000:]}"
    )
    return folder


def repo_version() -> str:
    """The one version: ``memory_ls.__version__``, which pyproject.toml reads (dynamic)."""
    text = (REPO / "memory_ls" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_version_has_one_source() -> None:
    """pyproject.toml takes the version from the package; it does not repeat it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "memory_ls.__version__"


def test_wheel_holds_every_module_and_data_file(dist: Dist) -> None:
    """Every module of the checkout, py.typed and the published schemas are in the wheel;
    the sdist also carries the schemas, the editors' files and the grammar."""
    assert dist.version == repo_version()
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"memory_ls-{dist.version}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"memory_ls-{dist.version}.dist-info/entry_points.txt").decode()
    modules = {path.relative_to(REPO).as_posix() for path in (REPO / "memory_ls").rglob("*.py")}
    assert modules - names == set(), (
        "modules missing from the wheel: add their package to [tool.setuptools] packages "
        "in pyproject.toml"
    )
    assert "memory_ls/py.typed" in names
    schemas = {f"memory_ls/schemas_json/{p.name}" for p in (REPO / "schemas").glob("*.json")}
    assert schemas and schemas <= names, sorted(schemas - names)
    assert re.search(r"^memory-ls\s*=\s*memory_ls\.", entry_points, re.MULTILINE), entry_points
    assert f"Version: {dist.version}" in metadata
    assert "Requires-Python: >=3.11" in metadata

    root = f"memory_ls-{dist.version}/"
    with tarfile.open(dist.sdist) as sdist:
        members = {name.removeprefix(root) for name in sdist.getnames()}
    wanted = {
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        *(p.relative_to(REPO).as_posix() for p in (REPO / "schemas").glob("*.json")),
        *(p.relative_to(REPO).as_posix() for p in (REPO / "editors").rglob("*") if p.is_file()),
        "syntaxes/memory.tmLanguage.json",
        *modules,
    }
    assert wanted - members == set()
    assert not any("node_modules" in name for name in members)


def test_installed_verbs_run_from_the_wheel(venv: Path, dist: Dist, workspace: Workspace) -> None:
    """``add``, ``list``, ``inject`` and ``check`` of the installed ``memory-ls`` script, in a
    project outside the checkout, import the installed package (not the checkout's)."""
    python = venv / "bin" / "python"
    where = run(
        [str(python), "-c", "import memory_ls; print(memory_ls.__file__)"],
        cwd=workspace.root,
        env=outside_env(workspace.env()),
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    assert not Path(where.stdout.strip()).is_relative_to(REPO)

    program = [str(venv / "bin" / "memory-ls")]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return workspace.cli(*args, program=program)

    version = cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"memory-ls {dist.version}"

    added = cli("add", "--trusted", "use pnpm, not npm")
    assert added.returncode == 0, added.stderr
    assert "use pnpm, not npm" in workspace.text("project")
    cli("add", "--scope", "global", "prefer ripgrep over grep")

    listed = cli("list", "--trusted", "--json")
    assert listed.returncode == 0, listed.stderr
    notes = json.loads(listed.stdout)
    assert "use pnpm, not npm" in json.dumps(notes)
    assert "prefer ripgrep over grep" in json.dumps(notes)

    injected = cli("inject", "--trusted")
    assert injected.returncode == 0, injected.stderr
    assert injected.stdout.startswith("[MEMORY]")
    assert "use pnpm, not npm" in injected.stdout

    clean = cli("check", "--trusted")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    workspace.write("project", ["use pnpm, not npm", "Use pnpm, not npm."])
    flagged = cli("check", "--trusted")
    assert flagged.returncode == 1, flagged.stdout + flagged.stderr
    assert "duplicate" in flagged.stdout


def test_installed_servers_answer_initialize(venv: Path, dist: Dist, workspace: Workspace) -> None:
    """``memory-ls serve`` (LSP) and ``memory-ls mcp`` from the wheel answer ``initialize``
    with the package's version."""
    memory_ls = str(venv / "bin" / "memory-ls")
    env = outside_env(workspace.env())
    lsp = lsp_initialize([memory_ls, "serve"], cwd=workspace.root, env=env)
    assert lsp["serverInfo"] == {"name": "memory-ls", "version": dist.version}, lsp
    assert "textDocumentSync" in lsp["capabilities"]
    mcp = mcp_initialize([memory_ls, "mcp"], cwd=workspace.root, env=env)
    assert mcp["serverInfo"]["version"] == dist.version, mcp
    assert "tools" in mcp["capabilities"]


@pytest.fixture(scope="module")
def tool_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch venv holding pipx and uv, installed from pip's configured index."""
    folder = tmp_path_factory.mktemp("tools") / "venv"
    assert run([sys.executable, "-m", "venv", str(folder)], timeout=120).returncode == 0
    installed = run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "pipx", "uv"],
        timeout=600,
    )
    if installed.returncode != 0:
        message = f"pipx and uv cannot be installed from pip's index: {installed.stderr[-1500:]}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return folder


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_tool_install_gives_every_verb(
    tool: str, tool_venv: Path, dist: Dist, workspace: Workspace, tmp_path: Path
) -> None:
    """``pipx install`` / ``uv tool install`` of the wheel put a working ``memory-ls`` in
    their bin folder (kept under tmp: the real home's tool folders are never touched)."""
    bin_dir = tmp_path / "bin"
    env = outside_env(workspace.env())
    env["PATH"] = os.pathsep.join([str(tool_venv / "bin"), env.get("PATH", "/usr/bin:/bin")])
    if tool == "pipx":
        env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(bin_dir))
        env["PIPX_MAN_DIR"] = str(tmp_path / "man")
        command = [str(tool_venv / "bin" / "pipx"), "install", str(dist.wheel)]
    else:
        env.update(
            UV_TOOL_DIR=str(tmp_path / "uv-tools"),
            UV_TOOL_BIN_DIR=str(bin_dir),
            UV_CACHE_DIR=str(tmp_path / "uv-cache"),
            UV_PYTHON_DOWNLOADS="never",
            UV_PYTHON=sys.executable,
        )
        command = [str(tool_venv / "bin" / "uv"), "tool", "install", str(dist.wheel)]
    installed = run(command, cwd=tmp_path, env=env, timeout=600)
    assert installed.returncode == 0, (
        f"{tool} install failed:\n{installed.stdout}\n{installed.stderr}"
    )
    program = [str(bin_dir / "memory-ls")]
    version = workspace.cli("--version", program=program)
    assert version.stdout.strip() == f"memory-ls {dist.version}", version.stderr
    added = workspace.cli("add", "--trusted", f"installed with {tool}", program=program)
    assert added.returncode == 0, added.stderr
    assert f"installed with {tool}" in workspace.text("project")
    for verb in ("list", "inject", "check", "doctor", "path"):
        proc = workspace.cli(verb, "--trusted", program=program)
        assert proc.returncode == 0, f"{verb}: {proc.stdout}{proc.stderr}"
    lsp = lsp_initialize([*program, "serve"], cwd=workspace.root, env=env)
    assert lsp["serverInfo"]["version"] == dist.version
