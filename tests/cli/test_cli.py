"""The `memory-ls` command line, run as a real subprocess (SPEC §8)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CLI_TIMEOUT, Workspace, store_text

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"


def test_add_list_and_json(workspace: Workspace) -> None:
    r = workspace.cli("add", "use pnpm, not npm")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Added to project memory: use pnpm, not npm\nNow 1 project, 0 global.\n"
    assert workspace.project_store.read_text() == f"{HEADER}\n\n- use pnpm, not npm\n"
    r = workspace.cli("add", "--scope", "global", "answer in English")
    assert r.returncode == 0
    r = workspace.cli("list", "--json")
    data = json.loads(r.stdout)
    assert data["project"] == ["use pnpm, not npm"]
    assert data["global"] == ["answer in English"]
    assert data["changed"] is False


def test_near_duplicate_is_not_an_error(workspace: Workspace) -> None:
    workspace.cli("add", "use pnpm, not npm")
    r = workspace.cli("add", "--json", "Use pnpm, not npm.")
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert data["changed"] is False and data["existing"] == "use pnpm, not npm"


def test_double_dash_lets_a_note_start_with_a_dash(workspace: Workspace) -> None:
    r = workspace.cli("add", "--", "-v makes pytest verbose")
    assert r.returncode == 0, r.stderr
    assert "- -v makes pytest verbose" in workspace.project_store.read_text()


@pytest.mark.parametrize("spelling", [["--to=--"], ["--to", "--"]])
def test_an_option_value_of_two_dashes_is_kept(workspace: Workspace, spelling: list[str]) -> None:
    # argparse reads `--to=--` as an empty list: the update was refused as `to is required.`
    workspace.write("project", ["a"])
    r = workspace.cli("update", "--json", *spelling, "--", "a")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["project"] == ["--"]


def test_options_after_the_verb_and_project_dir(workspace: Workspace, tmp_path: Path) -> None:
    sub = workspace.root / "src" / "deep"
    sub.mkdir(parents=True)
    r = workspace.cli("add", "from a subdir", "--project", str(sub), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "from a subdir" in workspace.project_store.read_text()


def test_update_forget_merge_move(workspace: Workspace) -> None:
    workspace.cli("add", "a")
    workspace.cli("add", "b")
    assert workspace.cli("update", "a", "--to", "a2").returncode == 0
    assert workspace.cli("merge", "a2", "b", "--to", "a2; b").returncode == 0
    assert workspace.cli("move", "a2; b").returncode == 0
    data = json.loads(workspace.cli("list", "--json").stdout)
    assert data["project"] == [] and data["global"] == ["a2; b"]
    r = workspace.cli("forget", "--scope", "global", "a2; b")
    assert r.returncode == 0
    assert workspace.global_store.read_text() == f"{HEADER}\n"


def test_refusals_exit_1_with_exact_message(workspace: Workspace) -> None:
    r = workspace.cli("forget", "nope")
    assert r.returncode == 1
    assert r.stderr.strip() == "Error: No project memory note matches: nope"
    r = workspace.cli("add", "   ")
    assert r.returncode == 1 and "text is required." in r.stderr
    r = workspace.cli("add", "x" * 501)
    assert r.returncode == 1 and "text is longer than 500 characters." in r.stderr
    r = workspace.cli("add", "--untrusted", "secret")
    assert r.returncode == 1
    assert 'Project memory is unavailable for an untrusted project; use scope "global".' in r.stderr
    assert not workspace.project_store.exists()


def test_usage_errors_exit_2(workspace: Workspace) -> None:
    assert workspace.cli("bogus").returncode == 2
    assert workspace.cli("list", "--scope", "team").returncode == 2
    assert workspace.cli("list", "--nope").returncode == 2
    assert workspace.cli("update", "a").returncode == 2  # --to is required


def test_clear_needs_yes_off_a_terminal(workspace: Workspace) -> None:
    workspace.cli("add", "keep me")
    before = workspace.project_store.read_bytes()
    r = workspace.cli("clear", stdin="y\n")
    assert r.returncode == 1 and "--yes" in r.stderr
    assert workspace.project_store.read_bytes() == before
    r = workspace.cli("clear", "--yes")
    assert r.returncode == 0
    assert workspace.project_store.read_text() == f"{HEADER}\n"


def test_path_and_inject(workspace: Workspace) -> None:
    workspace.cli("add", "note one")
    info = json.loads(workspace.cli("path", "--json").stdout)
    assert info["project"] == str(workspace.project_store)
    assert info["global"] == str(workspace.global_store)
    assert info["trusted"] is True and info["trustReason"]
    body = workspace.cli("inject").stdout
    assert body == (
        "[MEMORY]\nDurable notes saved in earlier sessions. Treat them as facts the user "
        "asked you to remember.\nproject:\n- note one\n"
    )
    data = json.loads(workspace.cli("inject", "--json").stdout)
    assert data["bytes"] == len(body.rstrip("\n").encode()) and data["included"] == 1


def test_list_with_unreadable_store_exits_1(workspace: Workspace, tmp_path: Path) -> None:
    (workspace.root / ".pi").mkdir()
    target = tmp_path / "elsewhere.md"
    target.write_text("- sneaky\n")
    workspace.project_store.symlink_to(target)
    r = workspace.cli("list", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["project"] == []
    assert data["error"] == f"Refusing to use the symlinked memory file: {workspace.project_store}"


def test_check_formats_and_exit_codes(workspace: Workspace, tmp_path: Path) -> None:
    lone = tmp_path / "notes.md"
    lone.write_text("- dup 😀 here\n- Dup 😀 here.\n")
    r = workspace.cli("check", str(lone))
    assert r.returncode == 1
    assert r.stdout.strip() == (
        f"{lone}:2:3: duplicate Duplicate of the note on line 1: dup 😀 here"
    )
    rows = json.loads(workspace.cli("check", "--format", "json", str(lone)).stdout)
    assert rows[0]["code"] == "duplicate" and rows[0]["column"] == 3
    assert rows[0]["endColumn"] == 3 + len("Dup 😀 here.")  # characters, not UTF-16
    sarif = json.loads(workspace.cli("check", "--format", "sarif", str(lone)).stdout)
    assert sarif["version"] == "2.1.0"
    assert sarif["runs"][0]["results"][0]["ruleId"] == "duplicate"
    clean = tmp_path / "clean.md"
    clean.write_text("- fine\n")
    assert workspace.cli("check", str(clean)).returncode == 0


def test_check_information_only_exits_0(workspace: Workspace) -> None:
    workspace.cli("add", "shared fact")
    workspace.cli("add", "--scope", "global", "shared fact")
    r = workspace.cli("check")
    assert "cross-scope-duplicate" in r.stdout
    assert r.returncode == 0


def test_check_not_the_store_in_a_linked_worktree(workspace: Workspace, tmp_path: Path) -> None:
    main_git = workspace.root / ".git"
    (main_git / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, as git writes it
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    (wt / ".pi").mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n")
    (wt / ".pi" / "memory.md").write_text("- stray note\n")
    r = workspace.cli("check", str(wt / ".pi" / "memory.md"))
    assert "not-the-store" in r.stdout and str(workspace.project_store) in r.stdout
    assert r.returncode == 1


def test_doctor_text_and_json(workspace: Workspace) -> None:
    workspace.cli("add", "a note")
    text = workspace.cli("doctor").stdout
    assert str(workspace.project_store) in text and "trust: trusted" in text
    data = json.loads(workspace.cli("doctor", "--json").stdout)
    assert data["project"]["notes"] == 1
    assert data["recall"]["maxInjectBytes"] == 8192
    assert data["trust"]["rule"] == "resources"


@pytest.mark.parametrize(
    "verb", [["list"], ["path"], ["inject"], ["doctor"], ["check"], ["list", "--json"]]
)
def test_read_only_verbs_do_not_import_the_server_stack(
    workspace: Workspace, verb: list[str]
) -> None:
    workspace.cli("add", "something")
    r = workspace.cli(*verb, python_flags=["-X", "importtime"])
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "memory_ls.store.runtime" in imported  # the probe does see our imports
    forbidden = {m for m in imported if m.split(".")[0] in ("pygls", "lsprotocol", "mcp")}
    assert not forbidden


def test_python_dash_m_and_console_script_agree(workspace: Workspace) -> None:
    exe = Path(sys.executable).parent / "memory-ls"
    if not exe.exists():
        pytest.skip("console script not installed in this interpreter's bin")
    workspace.cli("add", "same program")
    out = subprocess.run(
        [str(exe), "list", "--json"],
        cwd=workspace.root,
        env=workspace.env(),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )
    assert json.loads(out.stdout) == json.loads(workspace.cli("list", "--json").stdout)


def test_unwritable_store_folder_is_a_clear_refusal(workspace: Workspace) -> None:
    (workspace.root / ".pi").write_text("not a folder")
    r = workspace.cli("add", "x")
    assert r.returncode == 1
    assert r.stderr.startswith("Error: Cannot write the memory file ")
    assert "Traceback" not in r.stderr
    assert (workspace.root / ".pi").read_text() == "not a folder"


def test_check_global_store_file_in_the_context_of_project(
    workspace: Workspace, tmp_path: Path
) -> None:
    workspace.cli("add", "shared fact")
    workspace.cli("add", "--scope", "global", "shared fact")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = workspace.cli(
        "check",
        "--project",
        str(workspace.root),
        str(workspace.global_store),
        cwd=elsewhere,
    )
    assert f"{workspace.global_store}:3:3: cross-scope-duplicate" in r.stdout
    lone = workspace.cli("check", str(workspace.global_store), cwd=elsewhere)
    assert "cross-scope-duplicate" not in lone.stdout  # no project here to compare with


# -- check --format sarif ---------------------------------------------------------


def test_sarif_for_a_relative_file_path_does_not_crash(workspace: Workspace) -> None:
    """SPEC §8: ``check [FILE…] --format sarif``; a FILE is usually given relative."""
    (workspace.root / "notes.md").write_text("- a\n- a\n")
    r = workspace.cli("check", "--format", "sarif", "notes.md")
    assert r.returncode == 1, r.stderr
    sarif = json.loads(r.stdout)
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "notes.md"
    assert location["region"]["startLine"] == 2


# -- clear ------------------------------------------------------------------------


def test_clear_without_yes_off_a_terminal_prints_a_json_result(workspace: Workspace) -> None:
    """SPEC §8: ``clear`` prints a MemoryResult with ``--json``; off a terminal it needs --yes."""
    workspace.write("project", "- a\n")
    r = workspace.cli("clear", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["action"] == "clear" and data["changed"] is False
    assert data["project"] == ["a"]
    assert data["error"] == "clear needs --yes when not run on a terminal."
    assert workspace.read("project") == b"- a\n"


def test_clear_without_yes_in_text_mode_says_why_on_stderr(workspace: Workspace) -> None:
    workspace.write("project", "- a\n")
    r = workspace.cli("clear")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "Error: clear needs --yes when not run on a terminal.\n"


def test_clear_of_an_untrusted_project_is_refused_before_asking(workspace: Workspace) -> None:
    """An untrusted project can never be cleared, so there is nothing to confirm."""
    workspace.write("project", "- a\n")
    r = workspace.cli("clear", "--untrusted", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["error"] == (
        'Project memory is unavailable for an untrusted project; use scope "global".'
    )
    assert data["project"] == []
    assert workspace.read("project") == b"- a\n"


def test_clear_with_yes_still_works(workspace: Workspace) -> None:
    workspace.write("project", "# notes\n\n- a\n")
    r = workspace.cli("clear", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["changed"] is True
    assert workspace.read("project") == b"# notes\n"


# -- list echoes its scope ----------------------------------------------------------


def test_list_result_carries_the_requested_scope(workspace: Workspace) -> None:
    rt = workspace.runtime()
    assert rt.run("list", {"scope": "global"})["scope"] == "global"
    assert rt.run("list", {})["scope"] == "project"
    r = workspace.cli("list", "--scope", "global", "--json")
    assert json.loads(r.stdout)["scope"] == "global"


ODD_NOTES = [
    'quotes " and "" and \'single\'',
    "back\\slash \\\\ and \\n and \\u0000 as text",
    "emoji 😀 👩‍💻 🇫🇷 and CJK 日本語 and שלום",
    "controls\x01in\x1bthe\x7fnote\x9fend",  # normalised to spaces in the store
    "zero\u200bwidth and \u202ebidi and \u2028separator",
    "comma, colon: and brackets [ ] { } inside",
    "- a bullet marker and `code`",
]


@pytest.mark.parametrize(
    "verb", [["list", "--json"], ["list", "--json", "--scope", "global"], ["inject", "--json"]]
)
def test_json_output_is_the_standard_encoders_indented_text(
    workspace: Workspace, verb: list[str]
) -> None:
    """``--json`` prints ``json.dumps(value, indent=2, ensure_ascii=False)``'s text exactly
    (``core/json_text.py`` builds it without the standard encoder): odd characters, an
    empty list, a long list."""
    workspace.write("project", [*ODD_NOTES, *(f'note {i} 😀 "{i}"' for i in range(300))])
    workspace.write("global", [])
    r = workspace.cli(*verb)
    assert r.returncode == 0, r.stderr
    value = json.loads(r.stdout)
    assert r.stdout == json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if verb[0] == "list":
        assert value["project"][:3] == ODD_NOTES[:3] and value["global"] == []
        assert value["project"][3] == "controls in the note end"


def test_json_output_of_an_odd_project_path_is_the_standard_encoders_text(
    tmp_path: Path, workspace: Workspace
) -> None:
    """A folder name with a quote, a backslash, a tab and an emoji, in every JSON a read
    verb prints about it."""
    project = tmp_path / 'odd "dir" \\ \t 😀'
    (project / ".git").mkdir(parents=True)
    for verb in (["path", "--json"], ["list", "--json"], ["doctor", "--json"]):
        r = workspace.cli(*verb, "--project", str(project), cwd=project)
        value = json.loads(r.stdout)
        assert r.stdout == json.dumps(value, indent=2, ensure_ascii=False) + "\n", verb
    assert json.loads(workspace.cli("path", "--json", "--project", str(project)).stdout)[
        "project"
    ] == str(project / ".pi" / "memory.md")


def test_a_clear_confirmed_after_the_pi_link_moved_clears_nothing(workspace: Workspace) -> None:
    """``clear`` on a terminal names a file and counts its notes; the project's ``.pi`` (a
    symlink to a folder inside the project) is pointed at another folder there while the
    question waits. The "y" was said to the notes asked about: nothing is cleared."""
    first, second = workspace.root / "mem-a", workspace.root / "mem-b"
    first.mkdir()
    second.mkdir()
    (first / "memory.md").write_text(store_text("a", "b"), encoding="utf-8")
    (second / "memory.md").write_text(store_text("o", "p", "q"), encoding="utf-8")
    pi = workspace.root / ".pi"
    pi.symlink_to(first, target_is_directory=True)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_ls", "clear", "--trusted"],
        cwd=workspace.root,
        env=workspace.env(),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    try:
        asked = b""
        deadline = time.monotonic() + CLI_TIMEOUT
        while b"[y/N]" not in asked:
            assert time.monotonic() < deadline, asked
            if select.select([master], [], [], 0.1)[0]:
                asked += os.read(master, 4096)
        assert b"Remove all 2 project note(s)" in asked
        pi.unlink()
        pi.symlink_to(second, target_is_directory=True)
        os.write(master, b"y\n")
        out, _ = proc.communicate(timeout=CLI_TIMEOUT)
        said = b""
        while select.select([master], [], [], 0.2)[0]:
            try:
                said += os.read(master, 4096)
            except OSError:
                break
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, said)
    assert os.path.realpath(second / "memory.md").encode() in said
    assert (second / "memory.md").read_text() == store_text("o", "p", "q")
    assert (first / "memory.md").read_text() == store_text("a", "b")
