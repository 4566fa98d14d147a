"""How the read verbs an agent runs before every run end (issue 11: ``inject`` and
``list --json`` in ≤ 60 ms): the output first, whole, then the process at once.

``memory_ls.__main__.QUICK_VERBS`` run as the program do without the garbage collector
and the interpreter's teardown (``os._exit`` once stdout and stderr are flushed).
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.conftest import Workspace


def run_as_program(workspace: Workspace, argv: list[str], setup: str = "") -> tuple[int, str, str]:
    """``memory-ls ARGV`` as the console script runs it (``sys.exit(main())``), with a
    probe object whose finaliser reports the interpreter's teardown on stderr."""
    probe = textwrap.dedent(
        """
        import os, sys
        class Probe:
            def __del__(self):
                os.write(2, b"torn down\\n")
        probe = Probe()
        """
    )
    run = f"sys.argv = ['memory-ls', *{argv!r}]\nfrom memory_ls.__main__ import main\nsys.exit(main())"
    script = f"{probe}\n{setup}\n{run}\n"
    done = workspace.cli(program=[sys.executable, "-c", script])
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("verb", [["inject"], ["list", "--json"], ["path", "--json"]])
def test_a_read_verb_prints_everything_then_ends_without_the_teardown(
    workspace: Workspace, verb: list[str]
) -> None:
    workspace.write("project", [f"note {i}" for i in range(50)])
    code, out, err = run_as_program(workspace, verb)
    assert code == 0, err
    assert "torn down" not in err  # ended at once
    assert out == workspace.cli(*verb).stdout  # the same output, all of it
    assert out.endswith("\n")


def test_check_prints_everything_and_keeps_its_exit_code_then_ends_without_the_teardown(
    workspace: Workspace,
) -> None:
    # ENDS_AT_ONCE: check reads only, and its findings exit 1; the similar pass's thread
    # has finished by then (a thread still running would get the usual end).
    notes = [f"use pnpm for package number {i} in the repo" for i in range(60)]
    workspace.write("project", [*notes, notes[0]])
    code, out, err = run_as_program(workspace, ["check"])
    expected = workspace.cli("check")
    assert code == expected.returncode == 1, err
    assert "torn down" not in err
    assert out == expected.stdout and "duplicate" in out and "similar" in out


def test_a_read_verb_keeps_its_exit_code_and_its_error_when_it_ends_at_once(
    workspace: Workspace,
) -> None:
    (workspace.root / ".pi").mkdir()
    workspace.project_store.symlink_to(workspace.root / "elsewhere.md")
    code, out, err = run_as_program(workspace, ["list", "--json"])
    assert code == 1
    assert "torn down" not in err
    assert json.loads(out)["error"].startswith("Refusing to use the symlinked memory file")


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        ("import atexit; atexit.register(lambda: os.write(2, b'atexit ran\\n'))", "atexit ran"),
        (
            "import threading, time\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), os.write(2, b'thread ended\\n'))"
            ").start()",
            "thread ended",
        ),
    ],
    ids=["atexit", "thread"],
)
def test_an_atexit_function_or_another_thread_gets_the_usual_end(
    workspace: Workspace, setup: str, why: str
) -> None:
    workspace.write("project", ["one note"])
    code, out, err = run_as_program(workspace, ["inject"], setup)
    assert code == 0
    assert why in err and "torn down" in err
    assert out.endswith("- one note\n")


def test_other_verbs_and_main_called_with_arguments_end_as_usual(workspace: Workspace) -> None:
    workspace.write("project", ["one note"])
    _, _, err = run_as_program(workspace, ["doctor"])
    assert "torn down" in err
    script = (
        "from memory_ls.__main__ import main\n"
        "import sys\n"
        "code = main(['inject'])\n"  # called, not run: it returns
        "print('returned', code, file=sys.stderr)\n"
    )
    done = workspace.cli(program=[sys.executable, "-c", script])
    assert "returned 0" in done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
def test_ctrl_c_during_a_quick_verb_still_ends_quietly_with_130(workspace: Workspace) -> None:
    """A quick verb keeps Python's own SIGINT handler (``signal`` is not imported): its
    KeyboardInterrupt still ends the command with one line and exit status 130."""
    script = (
        "import os, signal, sys, time\n"
        "import memory_ls.cli as cli\n"
        "def run(argv):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
        "cli.main = run\n"
        "sys.argv = ['memory-ls', 'inject']\n"
        "from memory_ls.__main__ import main\n"
        "sys.exit(main())\n"
    )
    done = workspace.cli(program=[sys.executable, "-c", script])
    assert (done.returncode, done.stderr) == (130, "memory-ls: interrupted\n")


@pytest.mark.parametrize(
    ("verb", "collector"),
    [
        ("check", "on 50000"),
        ("doctor", "on 50000"),
        ("add", "on 50000"),
        ("inject", "off 700"),
        ("serve", "on 700"),
        ("mcp", "on 700"),
    ],
)
def test_a_verb_that_runs_once_collects_rarely_and_a_server_as_python_does(
    workspace: Workspace, verb: str, collector: str
) -> None:
    # The verb's work replaced by a report of the collector as it would run it.
    setup = (
        "import gc, memory_ls.cli\n"
        "def report(argv=None):\n"
        "    on = 'on' if gc.isenabled() else 'off'\n"
        "    os.write(2, f'collector {on} {gc.get_threshold()[0]}\\n'.encode())\n"
        "    return 0\n"
        "memory_ls.cli.main = report\n"
    )
    code, _, err = run_as_program(workspace, [verb], setup)
    assert code == 0, err
    assert f"collector {collector}\n" in err
