"""Standard output that cannot take the text (a full disk, an encoding without the note's
characters): one line that says why on stderr, exit 1, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import CLI_TIMEOUT, Workspace


def run(workspace: Workspace, *args: str, stdout: object, env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "memory_ls", *args],
        cwd=workspace.root,
        env=env,
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    return done.returncode, done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "verb", [["list"], ["list", "--json"], ["inject"], ["path"], ["add", "c"], ["check"]]
)
def test_a_full_disk_under_stdout_is_one_line_and_exit_1(
    workspace: Workspace, verb: list[str]
) -> None:
    workspace.write("global", ["a é", "b 😀"])
    with open("/dev/full", "w") as full:
        code, err = run(workspace, *verb, stdout=full, env=workspace.env())
    if verb == ["check"]:
        assert code == 0 and "Traceback" not in err  # nothing to print on stdout
        return
    assert code == 1, err
    assert err.splitlines()[-1] == (
        "memory-ls: cannot write to standard output: No space left on device"
    ), err
    assert "Traceback" not in err and "Exception ignored" not in err
    if verb[0] == "add":  # the note was written before the output failed: nothing is lost
        assert "- c" in (workspace.root / ".pi" / "memory.md").read_text()


@pytest.mark.parametrize("verb", [["list"], ["list", "--json"], ["inject"]])
def test_an_encoding_without_the_notes_characters_says_how_to_fix_it(
    workspace: Workspace, verb: list[str]
) -> None:
    workspace.write("global", ["a é"])
    env = {**workspace.env(), "PYTHONIOENCODING": "ascii"}
    code, err = run(workspace, *verb, stdout=subprocess.PIPE, env=env)
    assert code == 1, err
    assert err.splitlines()[-1] == (
        "memory-ls: standard output cannot write 'é' in its encoding (ascii); "
        "use a UTF-8 locale or set PYTHONIOENCODING=utf-8"
    ), err
    assert "Traceback" not in err
