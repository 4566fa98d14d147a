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


def closed_pipe_run(
    workspace: Workspace, *args: str, read_first_line: bool = False
) -> tuple[int, str]:
    """``memory-ls ARGS | head``: the exit status and stderr of a process whose reader left.

    The reader leaves before the first write (its end closed at once, so every write
    meets EPIPE), or, as ``head -n 1`` does, after reading one line.
    """
    if not read_first_line:
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            return run(workspace, *args, stdout=write_end, env=workspace.env())
        finally:
            os.close(write_end)
    with subprocess.Popen(
        [sys.executable, "-m", "memory_ls", *args],
        cwd=workspace.root,
        env=workspace.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # the output is larger than a pipe holds: the writer meets EPIPE
        err = proc.stderr.read().decode()
        return proc.wait(timeout=CLI_TIMEOUT), err


MANY_DUPLICATES = ["use pnpm"] * 4000
"""A store whose check finds 3,999 `duplicate` warnings: ~0.5 MB of text output."""


@pytest.mark.parametrize(
    "fmt", [[], ["--json"], ["--format", "sarif"]], ids=["text", "json", "sarif"]
)
@pytest.mark.parametrize("read_first_line", [False, True], ids=["closed", "head"])
def test_check_into_a_closed_pipe_keeps_its_findings_exit_status_and_summary(
    workspace: Workspace, fmt: list[str], read_first_line: bool
) -> None:
    # SPEC §8: check exits 1 on an error or warning; a reader that leaves early
    # (`memory-ls check | head`) does not turn findings into success.
    workspace.write("project", MANY_DUPLICATES)
    code, err = closed_pipe_run(workspace, "check", *fmt, read_first_line=read_first_line)
    assert code == 1, err
    assert err == workspace.cli("check").stderr  # the summary, as when all was read
    assert err.startswith("1 files checked: 0 errors, 3999 warnings, ")


def test_check_into_a_closed_pipe_exits_0_when_clean(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm", "tests need DATABASE_URL"])
    code, err = closed_pipe_run(workspace, "check", "--json")  # `[]` still meets EPIPE
    assert (code, err) == (0, "1 files checked: 0 errors, 0 warnings, 0 other\n")


@pytest.mark.parametrize("verb", [["list"], ["list", "--json"], ["inject"], ["path"]])
@pytest.mark.parametrize("read_first_line", [False, True], ids=["closed", "head"])
def test_a_read_verb_into_a_closed_pipe_ends_quietly_with_0(
    workspace: Workspace, verb: list[str], read_first_line: bool
) -> None:
    # `memory-ls list | head`: the reader has what it wanted; not an error, and no
    # traceback or "Exception ignored" from the interpreter's last flush.
    workspace.write("project", [f"note number {i}" for i in range(8000)])
    code, err = closed_pipe_run(workspace, *verb, read_first_line=read_first_line)
    assert (code, err) == (0, "")


def closed_fd_run(workspace: Workspace, fd: int, *args: str) -> tuple[int, str, str]:
    """``memory-ls ARGS`` started with descriptor ``fd`` closed (``>&-`` or ``2>&-``):
    Python then has no ``sys.stdout`` / ``sys.stderr`` at all."""
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" "$@" {fd}>&-', sys.executable, "-m", "memory_ls", *args],
        cwd=workspace.root,
        env=workspace.env(),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("fmt", [[], ["--format", "sarif"]], ids=["text", "sarif"])
def test_check_with_stderr_closed_keeps_the_findings_exit_status(
    workspace: Workspace, fmt: list[str]
) -> None:
    # `memory-ls check 2>&-`: the summary has nowhere to go, and that is no finding.
    workspace.write("project", ["use pnpm", "tests need DATABASE_URL"])
    code, out, _ = closed_fd_run(workspace, 2, "check", *fmt)
    assert code == 0, out
    workspace.write("project", ["use pnpm", "use pnpm"])
    code, out, _ = closed_fd_run(workspace, 2, "check", *fmt)
    assert code == 1 and "duplicate" in out


def test_stdout_closed_is_one_line_and_never_a_traceback(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm"])
    code, _, err = closed_fd_run(workspace, 1, "check")
    assert (code, err) == (0, "1 files checked: 0 errors, 0 warnings, 0 other\n")
    code, _, err = closed_fd_run(workspace, 1, "list")
    assert (code, err) == (1, "memory-ls: cannot write to standard output: Bad file descriptor\n")
    code, _, err = closed_fd_run(workspace, 1, "add", "run the linter")
    assert code == 1 and "Traceback" not in err, err
    assert "- run the linter" in (workspace.root / ".pi" / "memory.md").read_text()  # not lost


@pytest.mark.parametrize(
    "verb", [["import", "/nonexistent/notes.md"], ["accept", "nope"], ["accept"], ["reject", "x"]]
)
def test_an_error_with_stderr_closed_never_lands_on_stdout(
    workspace: Workspace, verb: list[str]
) -> None:
    # print(..., file=None) writes to stdout: an error meant for stderr became output.
    code, out, _ = closed_fd_run(workspace, 2, *verb)
    assert code != 0
    assert out == ""
