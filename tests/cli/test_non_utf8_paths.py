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
import subprocess
import sys
from pathlib import Path

import pytest

from memory_ls.core.text import HEADER, display_path
from tests.conftest import CLI_TIMEOUT, Workspace, new_project, run_cli

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


def test_a_long_output_naming_a_non_utf8_project_is_valid_utf8(
    workspace: Workspace, project: Path, encoding: str | None
) -> None:
    """Past ``cli.WIDEN_FROM`` characters the CLI encodes the text itself (once) and writes
    the bytes: still valid UTF-8, the folder's byte shown as U+FFFD."""
    notes = [f"note {i} 😀" for i in range(300)]
    workspace.write(
        project / ".pi" / "memory.md",
        f"{HEADER}\n\n" + "".join(f"- {note}\n- {note}\n" for note in notes),
    )
    code, out = run(workspace, project, encoding, "check", "--format", "json")
    assert code == 1 and len(out) > 16 * 1024
    findings = json.loads(out)
    assert len(findings) >= 300 and all(SHOWN in f["path"] for f in findings)
    assert out == json.dumps(findings, indent=2, ensure_ascii=False) + "\n"


def test_a_long_output_to_a_stream_of_another_encoding_is_that_encoding(
    workspace: Workspace, project: Path
) -> None:
    """A stream that does not write UTF-8 keeps writing what it writes: the CLI hands it
    the text (UTF-16 here, which takes any lone surrogate's U+FFFD)."""
    workspace.write(
        project / ".pi" / "memory.md",
        f"{HEADER}\n\n" + "".join(f"- note {i} 😀\n" for i in range(2000)),
    )
    env = {**workspace.env(), "PYTHONIOENCODING": "utf-16"}
    done = subprocess.run(
        [sys.executable, "-m", "memory_ls", "list", "--json", "--project", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode("utf-16"))["project"][-1] == "note 1999 😀"


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "python -u"])
@pytest.mark.parametrize("size", [10, 40_000])
def test_say_writes_a_lone_surrogate_as_u_fffd_in_a_short_and_a_long_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, buffered: bool
) -> None:
    """``cli.say`` itself, on a real file stream (buffered, or the file itself as under
    ``python -u``): a long text (encoded by ``say``, written as bytes) and a short one
    (written by the stream) end up the same bytes."""
    import io

    from memory_ls import cli

    out = tmp_path / "out.txt"
    text = "caf\udce9 😀 " + "x" * size
    raw = io.FileIO(out, "w")
    under = io.BufferedWriter(raw) if buffered else raw
    with io.TextIOWrapper(under, encoding="utf-8", write_through=not buffered) as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        cli.say("first line")
        cli.say(text)
        cli.say("last", end="")
        monkeypatch.undo()
    assert out.read_bytes() == f"first line\n{text}\nlast".replace("\udce9", "\ufffd").encode()
