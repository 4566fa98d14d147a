"""A project whose folder name is not UTF-8: every verb's output is valid UTF-8 (and JSON).

Python reads the folder ``b"caf\\xe9"`` as the ``str`` ``"caf\\udce9"`` (a lone
surrogate), which cannot be written as UTF-8: printed as it is, it crashed a
verb under a strict ``PYTHONIOENCODING=utf-8`` and wrote bytes that are not
UTF-8 under the C.UTF-8 locale. The CLI writes it as U+FFFD
(``memory_ls.core.text.without_lone_surrogates``); quoted in a message it is
escaped as ``\\udce9`` (``display_path``), as any unseen character is.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from memory_ls.core.text import HEADER, display_path
from tests.conftest import Workspace, new_project, run_cli

pytestmark = pytest.mark.skipif(
    sys.platform in ("win32", "darwin"), reason="the file system must take any bytes in a name"
)

NAME = os.fsdecode(b"caf\xe9")
SHOWN = "caf\ufffd"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository whose folder name is the byte string ``caf\\xe9``."""
    return new_project(tmp_path / NAME)


@pytest.fixture(params=["locale", "utf-8"])
def encoding(request: pytest.FixtureRequest) -> str | None:
    """The child's standard streams: the locale's (surrogateescape), or strict UTF-8."""
    return None if request.param == "locale" else str(request.param)


def run(workspace: Workspace, project: Path, encoding: str | None, *args: str) -> tuple[int, str]:
    """``memory-ls ARGS --project <project>``: its exit code and standard output.

    Its output is decoded as strict UTF-8 (``run_cli``'s text mode under the
    tests' UTF-8 locale), so bytes that are not UTF-8 fail the test there.
    """
    env = workspace.env()
    if encoding is not None:
        env["PYTHONIOENCODING"] = encoding
    r = run_cli(*args, "--project", str(project), cwd=project, env=env)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stdout


def test_every_verb_prints_a_non_utf8_project_path_as_valid_utf8(
    workspace: Workspace, project: Path, encoding: str | None
) -> None:
    store = str(project / ".pi" / "memory.md")
    shown_store = store.replace(NAME, SHOWN)

    assert run(workspace, project, encoding, "add", "x") == (
        0,
        "Added to project memory: x\nNow 1 project, 0 global.\n",
    )
    assert (project / ".pi" / "memory.md").read_text() == f"{HEADER}\n\n- x\n"

    code, out = run(workspace, project, encoding, "list", "--json")
    assert code == 0 and json.loads(out)["project"] == ["x"]
    code, out = run(workspace, project, encoding, "list")
    assert code == 0 and "- x" in out

    code, out = run(workspace, project, encoding, "path", "--json")
    assert code == 0 and json.loads(out)["project"] == shown_store
    code, out = run(workspace, project, encoding, "path")
    assert code == 0 and out.splitlines()[0] == f"project: {shown_store}"

    code, out = run(workspace, project, encoding, "doctor")
    assert code == 0 and f"project: {display_path(store)}" in out  # "caf\\udce9", escaped
    code, out = run(workspace, project, encoding, "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["project"]["path"] == shown_store
    assert report["config"]["sources"][1]["path"] == shown_store.replace(
        "memory.md", "bytefly.json"
    )

    code, out = run(workspace, project, encoding, "inject")
    assert code == 0 and out.endswith("project:\n- x\n")
    code, out = run(workspace, project, encoding, "inject", "--json")
    assert code == 0 and json.loads(out)["included"] == 1


@pytest.mark.parametrize("form", ["text", "json", "sarif"])
def test_check_prints_findings_in_a_non_utf8_project_as_valid_utf8(
    workspace: Workspace, project: Path, encoding: str | None, form: str
) -> None:
    workspace.write(project / ".pi" / "memory.md", f"{HEADER}\n\n- x\n- x\n")
    code, out = run(workspace, project, encoding, "check", "--format", form)
    assert code == 1  # the duplicate is a warning
    assert "duplicate" in out
    if form == "json":
        (finding,) = json.loads(out)
        assert SHOWN in finding["path"]
    elif form == "sarif":  # a URI: the byte itself, percent-encoded
        assert "/caf%E9/.pi/memory.md" in json.dumps(json.loads(out))
    else:
        assert f"{display_path(project)}/.pi/memory.md:4:3: duplicate" in out
