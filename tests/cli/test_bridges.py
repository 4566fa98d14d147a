"""`memory-ls import` and `memory-ls export` as real processes (SPEC §15).

The files imported are the fixtures in ``tests/fixtures/bridges``, written to
each tool's documented format; the instruction files exported to start from
``tests/fixtures/bridges/instructions``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memory_ls.core.bridges import EXPORT_BEGIN, EXPORT_END, block_lines
from memory_ls.core.inbox import parse_inbox
from memory_ls.core.recall import recall_plan
from tests.conftest import Workspace, store_text

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bridges"
INSTRUCTIONS = FIXTURES / "instructions"


def copy(workspace: Workspace, name: str, to: str | None = None) -> Path:
    target = workspace.root / (to or Path(name).name)
    shutil.copyfile(FIXTURES / name, target)
    return target


def import_json(workspace: Workspace, *args: str) -> tuple[int, dict[str, object]]:
    r = workspace.cli("import", "--json", *args)
    return r.returncode, json.loads(r.stdout)


# -- import ------------------------------------------------------------------------------


def test_import_claude_index_and_topic_file_in_one_go(workspace: Workspace) -> None:
    index = copy(workspace, "claude-MEMORY.md", "MEMORY.md")
    topic = copy(workspace, "claude-topic-debugging.md", "debugging.md")
    code, result = import_json(workspace, "--format", "claude", str(index), str(topic))
    assert code == 0
    assert result == {
        "added": [
            "Use pnpm, not npm, in this repository",
            "Tests need DATABASE_URL set; see [testing](testing.md)",
            "[Debugging notes](debugging.md) — how to attach to the worker",
            "`make build` before `make test`",
            "Attach with `node --inspect-brk worker.js`",
            "Logs go to /tmp/worker.log",
            "Rotate them with `logrotate -f conf/logrotate.conf`",
            "Nested three deep: keep the last 5 files",
            "Star bullets are notes too",
        ],
        "skipped": [],
        "refused": [],
    }
    assert workspace.text("project") == store_text(*result["added"])  # type: ignore[arg-type]


def test_import_gemini_section_into_global(workspace: Workspace) -> None:
    path = copy(workspace, "gemini-GEMINI.md", "GEMINI.md")
    code, result = import_json(workspace, "--scope", "global", str(path))
    assert code == 0
    assert result["added"] == [
        "The user prefers tabs over spaces",
        "Deploys go through `./scripts/deploy.sh staging`",
        "My favourite colour is blue",
    ]
    assert not workspace.project_store.exists()
    assert workspace.text("global") == store_text(*result["added"])  # type: ignore[arg-type]


def test_import_hermes_memory_and_user(workspace: Workspace) -> None:
    memory = copy(workspace, "hermes-MEMORY.md", "MEMORY.md")
    user = copy(workspace, "hermes-USER.md", "USER.md")
    code, result = import_json(workspace, "--format", "hermes", str(memory), str(user))
    assert code == 0
    assert len(result["added"]) == 5  # type: ignore[arg-type]
    assert "User prefers concise answers. Multi-line entries are one note:" in str(result["added"])


def test_import_bom_crlf_and_an_empty_gemini_section(workspace: Workspace) -> None:
    crlf = copy(workspace, "notes-bom-crlf.md")
    empty = copy(workspace, "gemini-empty-section.md")
    r = workspace.cli("import", str(crlf), str(empty))
    assert r.returncode == 0, r.stderr
    assert "No notes found in" in r.stderr and "gemini-empty-section.md" in r.stderr
    assert r.stdout.splitlines() == [
        "Imported 3, skipped 0, refused 0.",
        "+ first CRLF note",
        "+ second CRLF note",
        "+ tab-indented nested note",
    ]


def test_import_skips_what_the_store_or_the_import_holds(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm, not npm, in this repository"])
    notes = workspace.root / "notes.md"
    notes.write_text("- Use pnpm, not npm, in this repository.\n- new one\n- New one!\n")
    code, result = import_json(workspace, str(notes))
    assert code == 0
    assert result == {
        "added": ["new one"],
        "skipped": ["Use pnpm, not npm, in this repository.", "New one!"],
        "refused": [],
    }
    assert workspace.text("project") == store_text(
        "use pnpm, not npm, in this repository", "new one"
    )


def test_duplicates_are_judged_against_the_target_scope(workspace: Workspace) -> None:
    workspace.write("global", ["shared note"])
    notes = workspace.root / "notes.md"
    notes.write_text("- shared note\n")
    code, result = import_json(workspace, str(notes))  # into project: global does not count
    assert code == 0 and result["added"] == ["shared note"]


def test_over_long_notes_are_refused_listed_whole_and_exit_1(workspace: Workspace) -> None:
    long = "y" * 501
    notes = workspace.root / "notes.md"
    notes.write_text(f"- fine\n- {long}\n")
    r = workspace.cli("import", "--json", str(notes))
    assert r.returncode == 1
    result = json.loads(r.stdout)
    assert result["added"] == ["fine"]
    assert result["refused"] == [{"text": long, "error": "text is longer than 500 characters."}]
    assert workspace.text("project") == store_text("fine")
    r = workspace.cli("import", str(notes))
    assert r.returncode == 1 and f"! {long} (text is longer than 500 characters.)" in r.stdout


def test_an_import_that_crosses_the_cap_is_refused_whole(workspace: Workspace) -> None:
    workspace.write("project", ["already here"])
    before = workspace.read("project")
    big = workspace.root / "big.md"
    # 300 notes of ~1 KB each (two-byte characters): far over 262,144 bytes together.
    big.write_text("".join(f"- note {i:03d} " + "é" * 480 + "\n" for i in range(300)))
    code, result = import_json(workspace, str(big))
    assert code == 1
    assert result["added"] == [] and len(result["refused"]) == 300  # type: ignore[arg-type]
    errors = {r["error"] for r in result["refused"]}  # type: ignore[attr-defined]
    assert len(errors) == 1
    (error,) = errors
    assert error.startswith("Memory file is ") and "larger than the 262144-byte limit" in error
    assert workspace.read("project") == before


def test_an_untrusted_project_refuses_the_import(workspace: Workspace) -> None:
    notes = workspace.root / "notes.md"
    notes.write_text("- a note\n")
    code, result = import_json(workspace, "--untrusted", str(notes))
    assert code == 1
    assert result["refused"] == [
        {
            "text": "a note",
            "error": 'Project memory is unavailable for an untrusted project; use scope "global".',
        }
    ]
    assert not workspace.project_store.exists()


def test_a_file_that_cannot_be_read_imports_nothing(workspace: Workspace) -> None:
    good = workspace.root / "good.md"
    good.write_text("- a note\n")
    r = workspace.cli("import", str(good), str(workspace.root / "missing.md"))
    assert r.returncode == 1 and "No such import file" in r.stderr
    bad = workspace.root / "bad.md"
    bad.write_bytes(b"- caf\xe9\n")
    r = workspace.cli("import", str(good), str(bad))
    assert r.returncode == 1 and "not valid UTF-8 (first bad byte at offset 5)" in r.stderr
    fifo = workspace.root / "fifo.md"
    os.mkfifo(fifo)
    r = workspace.cli("import", str(fifo), timeout=20)
    # Named as what it is: an import file, not a memory file.
    assert r.returncode == 1 and f"The import file is not a regular file: {fifo}" in r.stderr
    assert not workspace.project_store.exists()
    r = workspace.cli("export", "--to", str(fifo), "--trusted", timeout=20)
    assert r.returncode == 1 and f"The export target is not a regular file: {fifo}" in r.stderr


# -- import --propose (SPEC §15 with §12) ------------------------------------------------------


def inbox_of(workspace: Workspace) -> Path:
    return workspace.root / ".pi" / "memory.inbox.jsonl"


def test_import_propose_queues_proposals_then_accept_adds_them(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm"])
    before = workspace.read("project")
    assert workspace.cli("add", "--propose", "tests need DATABASE_URL").returncode == 0
    notes = workspace.root / "notes.md"
    long = "y" * 501
    notes.write_text(
        "- Use pnpm.\n- Tests need DATABASE_URL!\n- run make build first\n"
        f"- deploys go through staging\n- Run make build first.\n- {long}\n"
    )
    r = workspace.cli("import", "--propose", "--by", "claude-code", str(notes))
    assert r.returncode == 1, r.stderr  # a note was refused
    assert r.stdout == (
        "Proposed 2 for review, skipped 3, refused 1.\n"
        "+ run make build first\n+ deploys go through staging\n"
        "= Use pnpm. (already stored)\n= Tests need DATABASE_URL! (already proposed)\n"
        "= Run make build first. (already stored)\n"
        f"! {long} (text is longer than 500 characters.)\n"
        "3 waiting for review.\n"
    )
    assert workspace.read("project") == before  # nothing written to the store
    listing = json.loads(workspace.cli("inbox", "--json").stdout)
    assert [(p["text"], p["by"]) for p in listing["project"]] == [
        ("tests need DATABASE_URL", "cli"),
        ("run make build first", "claude-code"),
        ("deploys go through staging", "claude-code"),
    ]
    # Again: everything already waits, so nothing is queued and the inbox is as it was.
    inbox = inbox_of(workspace).read_bytes()
    code, result = import_json(workspace, "--propose", str(notes))
    assert code == 1 and result["added"] == [] and len(result["skipped"]) == 5  # type: ignore[arg-type]
    assert inbox_of(workspace).read_bytes() == inbox
    r = workspace.cli("accept", "--all")
    assert r.returncode == 0, r.stderr
    assert workspace.text("project") == store_text(
        "use pnpm", "tests need DATABASE_URL", "run make build first", "deploys go through staging"
    )
    assert not inbox_of(workspace).exists()


def test_import_propose_json_and_global_scope(workspace: Workspace) -> None:
    notes = workspace.root / "notes.md"
    notes.write_text("- one\n- two\n")
    code, result = import_json(workspace, "--propose", "--scope", "global", str(notes))
    assert (code, result) == (0, {"added": ["one", "two"], "skipped": [], "refused": []})
    assert not workspace.global_store.exists()
    inbox = workspace.agent_dir / "memory.inbox.jsonl"
    assert [p["text"] for p in parse_inbox(inbox.read_text()).proposals] == ["one", "two"]
    assert not (workspace.root / ".pi").exists()


def test_import_propose_that_would_overflow_the_inbox_is_refused_whole(
    workspace: Workspace,
) -> None:
    big = workspace.root / "big.md"
    big.write_text("".join(f"- note {i:03d}\n" for i in range(300)))
    code, result = import_json(workspace, "--propose", str(big))  # into no .pi/ at all
    assert code == 1 and len(result["refused"]) == 300  # type: ignore[arg-type]
    assert not (workspace.root / ".pi").exists()
    assert workspace.cli("add", "--propose", "waiting already").returncode == 0
    inbox = inbox_of(workspace).read_bytes()
    code, result = import_json(workspace, "--propose", str(big))
    assert code == 1
    assert result["added"] == [] and len(result["refused"]) == 300  # type: ignore[arg-type]
    full = "The project inbox is full (200 proposals); review them first."
    assert {r["error"] for r in result["refused"]} == {full}  # type: ignore[attr-defined]
    assert inbox_of(workspace).read_bytes() == inbox
    assert not workspace.project_store.exists()
    # 199 fit beside the one waiting: the inbox holds exactly 200.
    big.write_text("".join(f"- note {i:03d}\n" for i in range(199)))
    code, result = import_json(workspace, "--propose", str(big))
    assert code == 0 and len(result["added"]) == 199  # type: ignore[arg-type]
    assert len(json.loads(workspace.cli("inbox", "--json").stdout)["project"]) == 200


def test_import_propose_is_refused_for_an_untrusted_project(workspace: Workspace) -> None:
    notes = workspace.root / "notes.md"
    notes.write_text("- a note\n")
    r = workspace.cli("import", "--propose", "--untrusted", str(notes))
    assert r.returncode == 1
    assert r.stdout == (
        "Proposed 0 for review, skipped 0, refused 1.\n! a note (Project memory is "
        'unavailable for an untrusted project; use scope "global".)\n'
    )
    assert not (workspace.root / ".pi").exists()


def test_import_by_needs_propose(workspace: Workspace) -> None:
    notes = workspace.root / "notes.md"
    notes.write_text("- a note\n")
    r = workspace.cli("import", "--by", "me", str(notes))
    assert (r.returncode, r.stderr) == (2, "memory-ls import: error: --by needs --propose\n")
    assert not workspace.project_store.exists()


def test_import_needs_a_file_and_a_known_format(workspace: Workspace) -> None:
    assert workspace.cli("import").returncode == 2
    r = workspace.cli("import", "--format", "yaml", "x.md")
    assert r.returncode == 2 and "invalid choice" in r.stderr


# -- export ------------------------------------------------------------------------------

NAMES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")


def body_of(project: list[str], global_: list[str]) -> str | None:
    return recall_plan(project, global_, 8192, True).body


def block(body: str | None, eol: str = "\n") -> str:
    return eol.join(block_lines(body))


def stores(workspace: Workspace) -> str | None:
    workspace.write("project", ["use pnpm, not npm"])
    workspace.write("global", ["answer in English"])
    return body_of(["use pnpm, not npm"], ["answer in English"])


@pytest.mark.parametrize("name", NAMES)
def test_export_adds_a_block_to_a_file_without_one(workspace: Workspace, name: str) -> None:
    body = stores(workspace)
    target = workspace.root / name
    prose = (INSTRUCTIONS / name).read_bytes()
    target.write_bytes(prose)
    r = workspace.cli("export", "--to", name, "--trusted")
    assert r.returncode == 0, r.stderr
    assert "Added the memory-ls block" in r.stdout
    assert target.read_bytes() == prose + b"\n" + block(body).encode() + b"\n"


@pytest.mark.parametrize("name", NAMES)
def test_export_replaces_a_stale_block_and_keeps_the_prose(workspace: Workspace, name: str) -> None:
    body = stores(workspace)
    prose = (INSTRUCTIONS / name).read_text()
    stale = block(body_of(["use npm"], ["answer in English"]))
    target = workspace.root / name
    target.write_text(prose + "\n" + stale + "\n\nAfter the block.\n")
    r = workspace.cli("export", "--to", name, "--trusted")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Updated the memory-ls block in ")
    assert target.read_text() == prose + "\n" + block(body) + "\n\nAfter the block.\n"


@pytest.mark.parametrize("name", NAMES)
def test_export_replaces_a_hand_edited_block_and_says_so(workspace: Workspace, name: str) -> None:
    body = stores(workspace)
    prose = (INSTRUCTIONS / name).read_text()
    edited = f"{EXPORT_BEGIN}\nMy own words, typed into the block.\n{EXPORT_END}"
    target = workspace.root / name
    target.write_text(edited + "\n\n" + prose)
    r = workspace.cli("export", "--to", name, "--trusted")
    assert r.returncode == 0, r.stderr
    assert "edited by hand" in r.stdout
    assert target.read_text() == block(body) + "\n\n" + prose


@pytest.mark.parametrize("name", NAMES)
def test_export_keeps_crlf(workspace: Workspace, name: str) -> None:
    body = stores(workspace)
    prose = (INSTRUCTIONS / name).read_bytes().replace(b"\n", b"\r\n")
    target = workspace.root / name
    stale = block(body_of([], ["old"]), "\r\n").encode()
    target.write_bytes(prose + stale + b"\r\ntail\r\n")
    assert workspace.cli("export", "--to", name, "--trusted").returncode == 0
    assert target.read_bytes() == prose + block(body, "\r\n").encode() + b"\r\ntail\r\n"
    # Added to a CRLF file without a block: CRLF too.
    target.write_bytes(prose)
    assert workspace.cli("export", "--to", name, "--trusted").returncode == 0
    assert target.read_bytes() == prose + b"\r\n" + block(body, "\r\n").encode() + b"\r\n"


def test_export_is_idempotent(workspace: Workspace) -> None:
    stores(workspace)
    target = workspace.root / "AGENTS.md"
    shutil.copyfile(INSTRUCTIONS / "AGENTS.md", target)
    assert workspace.cli("export", "--to", "AGENTS.md", "--trusted").returncode == 0
    before = os.stat(target)
    content = target.read_bytes()
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 0 and "up to date" in r.stdout
    after = os.stat(target)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert target.read_bytes() == content


def test_export_creates_a_missing_file_relative_to_the_current_directory(
    workspace: Workspace,
) -> None:
    body = stores(workspace)
    sub = workspace.root / "docs"
    sub.mkdir()
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert (sub / "AGENTS.md").read_text() == block(body) + "\n"
    r = workspace.cli("export", "--to", "nowhere/AGENTS.md", "--trusted")
    assert r.returncode == 1 and "No such directory" in r.stderr


def test_export_check_writes_nothing(workspace: Workspace) -> None:
    stores(workspace)
    target = workspace.root / "AGENTS.md"
    r = workspace.cli("export", "--to", "AGENTS.md", "--check", "--trusted")
    assert r.returncode == 1 and "does not exist" in r.stderr
    assert not target.exists()
    shutil.copyfile(INSTRUCTIONS / "AGENTS.md", target)
    content = target.read_bytes()
    r = workspace.cli("export", "--to", "AGENTS.md", "--check", "--trusted")
    assert r.returncode == 1 and "has no memory-ls block" in r.stderr
    assert target.read_bytes() == content
    assert workspace.cli("export", "--to", "AGENTS.md", "--trusted").returncode == 0
    r = workspace.cli("export", "--to", "AGENTS.md", "--check", "--trusted")
    assert r.returncode == 0, r.stderr
    workspace.cli("add", "a new note", "--trusted")
    content = target.read_bytes()
    r = workspace.cli("export", "--to", "AGENTS.md", "--check", "--trusted", "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["status"] == "stale"
    assert target.read_bytes() == content


def test_an_untrusted_project_is_never_exported(workspace: Workspace) -> None:
    stores(workspace)
    target = workspace.root / "AGENTS.md"
    r = workspace.cli("export", "--to", "AGENTS.md", "--untrusted")
    assert r.returncode == 0, r.stderr
    assert "Project memory is left out: the project is untrusted" in r.stderr
    text = target.read_text()
    assert "use pnpm, not npm" not in text
    assert text == block(body_of([], ["answer in English"])) + "\n"


def test_export_through_a_symlink_updates_the_file_it_leads_to(workspace: Workspace) -> None:
    body = stores(workspace)
    agents = workspace.root / "AGENTS.md"
    shutil.copyfile(INSTRUCTIONS / "AGENTS.md", agents)
    claude = workspace.root / "CLAUDE.md"
    claude.symlink_to("AGENTS.md")
    assert workspace.cli("export", "--to", "CLAUDE.md", "--trusted").returncode == 0
    assert claude.is_symlink()
    assert agents.read_text().endswith(block(body) + "\n")


def test_export_never_cuts_a_hard_link(workspace: Workspace) -> None:
    # CLAUDE.md made a hard link to AGENTS.md (one file, two names): renaming a new file
    # over AGENTS.md would leave CLAUDE.md the old text, apart from then on without a word.
    stores(workspace)
    agents = workspace.root / "AGENTS.md"
    shutil.copyfile(INSTRUCTIONS / "AGENTS.md", agents)
    claude = workspace.root / "CLAUDE.md"
    os.link(agents, claude)
    content = agents.read_bytes()
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 1
    assert r.stderr.strip() == (
        f"Error: Refusing to export into {agents}: it has 2 hard links (other names for the same "
        "file), and replacing it would leave the others the old text. Make the other "
        "names symlinks to it (export follows a symlink), or this one a copy of its own."
    )
    assert agents.read_bytes() == claude.read_bytes() == content
    assert os.stat(agents).st_ino == os.stat(claude).st_ino
    # Checking writes nothing: it says what is stale as before.
    assert workspace.cli("export", "--to", "AGENTS.md", "--trusted", "--check").returncode == 1


def test_export_refuses_markers_that_do_not_pair_up(workspace: Workspace) -> None:
    stores(workspace)
    target = workspace.root / "AGENTS.md"
    target.write_text(f"# A\n{EXPORT_BEGIN}\n- x\nprose that must not be lost\n")
    content = target.read_bytes()
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 1 and "has no end marker" in r.stderr
    assert target.read_bytes() == content


def test_export_without_notes_writes_the_markers_alone(workspace: Workspace) -> None:
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 0, r.stderr
    assert (workspace.root / "AGENTS.md").read_text() == f"{EXPORT_BEGIN}\n{EXPORT_END}\n"


def test_export_refuses_an_unreadable_store(workspace: Workspace) -> None:
    workspace.write("global", b"x" * 262_145)
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 1 and "larger than the 262144-byte limit" in r.stderr
    assert not (workspace.root / "AGENTS.md").exists()


def test_export_keeps_the_file_mode(workspace: Workspace) -> None:
    stores(workspace)
    target = workspace.root / "AGENTS.md"
    target.write_text("# A\n")
    target.chmod(0o640)
    assert workspace.cli("export", "--to", "AGENTS.md", "--trusted").returncode == 0
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in workspace.root.iterdir() if p.name.endswith(".tmp")] == []


# -- export: attacks (an attacker's repository, a careless user) ------------------------------


@pytest.mark.parametrize("scope", ["project", "global"])
def test_export_refuses_to_write_into_a_memory_store(workspace: Workspace, scope: str) -> None:
    # The block's bullets would become notes of the store: the global notes copied
    # into the project's committed store, every note doubled on the next export.
    stores(workspace)
    store = workspace.store(scope)  # type: ignore[arg-type]
    content = store.read_bytes()
    r = workspace.cli("export", "--to", str(store), "--trusted")
    assert r.returncode == 1
    assert "Refusing to export into a memory file" in r.stderr
    assert store.read_bytes() == content
    link = workspace.root / "AGENTS.md"
    link.symlink_to(store)  # a link to the store is the store
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 1 and "Refusing to export into a memory file" in r.stderr
    assert store.read_bytes() == content
    hard = workspace.root / "CLAUDE.md"
    os.link(store, hard)  # and so is a hard link
    r = workspace.cli("export", "--to", "CLAUDE.md", "--trusted")
    assert r.returncode == 1 and "Refusing to export into a memory file" in r.stderr
    assert store.read_bytes() == content


def test_export_refuses_a_project_file_that_links_outside_the_project(
    workspace: Workspace, tmp_path: Path
) -> None:
    # A cloned repository can ship AGENTS.md -> ~/.bashrc; a project note such as
    # `$(curl … | sh)` appended there would run in the user's next shell.
    stores(workspace)
    outside = tmp_path / "bashrc"
    outside.write_text("export PATH=$PATH\n")
    (workspace.root / "AGENTS.md").symlink_to(os.path.relpath(outside, workspace.root))
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 1
    assert "resolves outside the project" in r.stderr
    assert outside.read_text() == "export PATH=$PATH\n"
    # Named through a symlinked path to the project, it is still the project's file.
    alias = tmp_path / "alias"
    alias.symlink_to(workspace.root)
    r = workspace.cli("export", "--to", str(alias / "AGENTS.md"), "--trusted")
    assert r.returncode == 1 and "resolves outside the project" in r.stderr
    assert outside.read_text() == "export PATH=$PATH\n"
    # A file outside the project, named as it is, is the user's own choice.
    own = tmp_path / "home-AGENTS.md"
    r = workspace.cli("export", "--to", str(own), "--trusted")
    assert r.returncode == 0, r.stderr


def test_export_markers_inside_a_code_fence_are_an_example_not_the_block(
    workspace: Workspace,
) -> None:
    body = stores(workspace)
    target = workspace.root / "AGENTS.md"
    example = (
        f"# How export works\n\n```markdown\n{EXPORT_BEGIN}\n(your notes)\n{EXPORT_END}\n```\n"
    )
    target.write_text(example)
    r = workspace.cli("export", "--to", "AGENTS.md", "--trusted")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == example + "\n" + block(body) + "\n"
    again = workspace.cli("export", "--to", "AGENTS.md", "--trusted", "--check")
    assert again.returncode == 0, again.stderr
