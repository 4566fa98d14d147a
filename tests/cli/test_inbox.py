"""``--propose``, ``inbox``, ``accept`` and ``reject`` as real processes (SPEC §12)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memory_ls.core.inbox import parse_inbox
from tests.conftest import Workspace, store_text

INBOX = Path(".pi") / "memory.inbox.jsonl"


def proposal_ids(workspace: Workspace, scope: str = "project") -> list[str]:
    path = workspace.root / INBOX if scope == "project" else workspace.agent_dir / INBOX.name
    if not path.exists():
        return []
    return [p["id"] for p in parse_inbox(path.read_text(encoding="utf-8")).proposals]


def test_propose_then_list_then_accept(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm"])
    r = workspace.cli("add", "--propose", "--by", "claude-code", "tests need DATABASE_URL")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "Proposed for review (project memory): tests need DATABASE_URL\n1 waiting for review.\n"
    )
    assert workspace.text("project") == store_text("use pnpm")
    r = workspace.cli("inbox")
    [pid] = proposal_ids(workspace)
    assert r.returncode == 0
    assert r.stdout.startswith(
        f"project (1):\n- {pid} add: tests need DATABASE_URL (by claude-code, "
    )
    assert r.stdout.endswith("global: none\n")
    listing = json.loads(workspace.cli("inbox", "--json").stdout)
    assert listing["global"] == [] and listing["project"][0]["id"] == pid
    r = workspace.cli("accept", pid)
    assert r.returncode == 0, r.stderr
    assert (
        r.stdout == "Added to project memory: tests need DATABASE_URL\nNow 2 project, 0 global.\n"
    )
    assert workspace.text("project") == store_text("use pnpm", "tests need DATABASE_URL")
    assert sorted(os.listdir(workspace.root / ".pi")) == ["memory.md"]


def test_exit_codes_and_messages(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm"])
    r = workspace.cli("add", "--propose", "Use PNPM")
    assert (r.returncode, r.stdout) == (0, "Already in project memory: use pnpm\n")
    r = workspace.cli("forget", "--propose", "nope")
    assert (r.returncode, r.stderr) == (1, "Error: No project memory note matches: nope\n")
    assert workspace.cli("forget", "--propose", "use pnpm").returncode == 0
    [pid] = proposal_ids(workspace)
    r = workspace.cli("forget", "--propose", "use pnpm", "--by", "other")
    assert (r.returncode, r.stdout) == (0, f"Already proposed ({pid}): use pnpm\n")
    r = workspace.cli("accept", "deadbeef", "--scope", "global")
    assert (r.returncode, r.stderr) == (1, "Error: No proposal deadbeef in global inbox.\n")
    assert workspace.cli("reject", "deadbeef").returncode == 1
    assert workspace.cli("accept").returncode == 2
    assert workspace.cli("reject", pid, "--all").returncode == 2
    # an empty ID names nothing: refused whole, the other ID's proposal kept
    r = workspace.cli("reject", pid, "")
    assert (r.returncode, r.stderr.splitlines()[-1]) == (
        2,
        "memory-ls reject: error: a proposal ID cannot be empty",
    )
    assert proposal_ids(workspace) == [pid]
    assert workspace.cli("add", "x", "--by", "me").returncode == 2
    # the store changed under the proposal: accepting removes it, with the action's error
    workspace.write("project", ["something else"])
    r = workspace.cli("accept", pid)
    assert (r.returncode, r.stderr) == (1, "Error: No project memory note matches: use pnpm\n")
    assert proposal_ids(workspace) == []


def test_update_edit_then_accept_and_reject_all(workspace: Workspace) -> None:
    workspace.write("global", ["use pnpm"])
    r = workspace.cli("update", "--propose", "--scope", "global", "use pnpm", "--to", "use pnpm 9")
    assert r.stdout.startswith("Proposed for review (global memory): use pnpm → use pnpm 9\n")
    [pid] = proposal_ids(workspace, "global")
    r = workspace.cli("accept", pid, "--to", "use pnpm 10", "--json")
    out = json.loads(r.stdout)
    assert out["results"][0]["to"] == "use pnpm 10" and out["waiting"]["global"] == 0
    assert workspace.text("global") == store_text("use pnpm 10")
    workspace.cli("add", "--propose", "a")
    workspace.cli("add", "--propose", "b", "--scope", "global")
    r = workspace.cli("reject", "--all")
    assert r.returncode == 0 and r.stdout.count("Rejected (") == 2
    assert not (workspace.root / INBOX).exists()
    assert not (workspace.agent_dir / INBOX.name).exists()


def test_untrusted_inbox_is_counted_with_its_text_withheld(workspace: Workspace) -> None:
    workspace.write("project", ["use pnpm"])
    workspace.cli("add", "--propose", "--trusted", "a secret")
    r = workspace.cli("inbox", "--untrusted")
    assert "a secret" not in r.stdout + r.stderr
    assert "(text withheld: the project is untrusted)" in r.stdout
    assert "project (1):" in r.stdout
    r = workspace.cli("add", "--propose", "--untrusted", "x")
    assert r.returncode == 1 and "untrusted project" in r.stderr


def test_a_nonsense_inbox_is_warned_about_and_kept(workspace: Workspace) -> None:
    path = workspace.write(workspace.root / INBOX, "not json\n")
    r = workspace.cli("inbox")
    assert r.returncode == 0
    assert r.stderr.endswith(
        f"Warning: {path}:1: not a valid proposal; kept as it is and ignored\n"
    )
    assert workspace.cli("add", "--propose", "a").returncode == 0
    assert workspace.cli("accept", "--all").returncode == 0
    assert path.read_text() == "not json\n"


PROPOSER = """
import sys
from pathlib import Path
from memory_ls.store.runtime import MemoryRuntime
from memory_ls.store.review import Review
review = Review(MemoryRuntime(Path(sys.argv[1])))
for i in range(int(sys.argv[3])):
    result, text = review.propose("add", {"text": f"{sys.argv[2]} note {i}"}, sys.argv[2])
    assert "error" not in result, result
"""


def test_concurrent_proposers_lose_nothing(workspace: Workspace, tmp_path: Path) -> None:
    project = workspace.root
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROPOSER, str(project), f"agent{w}", "25"],
            env=workspace.env(),
            stderr=subprocess.PIPE,
        )
        for w in range(4)
    ]

    def cli(w: int) -> subprocess.CompletedProcess[str]:
        return workspace.cli(
            "add", "--propose", "--project", str(project), f"cli {w}", cwd=tmp_path
        )

    with ThreadPoolExecutor(max_workers=6) as pool:
        for r in pool.map(cli, range(6)):
            assert r.returncode == 0, r.stderr
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    inbox = parse_inbox((project / INBOX).read_text(encoding="utf-8"))
    texts = sorted(p["text"] for p in inbox.proposals)
    expected = sorted(
        [f"agent{w} note {i}" for w in range(4) for i in range(25)] + [f"cli {w}" for w in range(6)]
    )
    assert texts == expected
    assert inbox.malformed == []
    assert len({p["id"] for p in inbox.proposals}) == len(expected)
    assert sorted(os.listdir(project / ".pi")) == ["memory.inbox.jsonl"]


EDITOR = """
import fcntl, os, sys, time
store = sys.argv[1]
folder = os.open(os.path.dirname(store), os.O_RDONLY)
print("ready", flush=True)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(folder, fcntl.LOCK_UN)
    except BlockingIOError:  # a writer holds the lock: save now, in place, as an editor does
        with open(store, "r+", encoding="utf-8") as f:
            text = f.read()
            f.seek(0)
            f.write(text + "- saved by the editor\\n")
        sys.exit(0)
sys.exit(1)
"""


def test_accept_keeps_an_editors_save_made_while_it_runs(workspace: Workspace) -> None:
    # An editor does not take the lock: a save between the accept's read and its rename
    # must not be overwritten (the action's own write path redoes it, SPEC §3 Writing).
    store = workspace.write("project", [f"note {i} " + "x" * 200 for i in range(1000)])
    inbox = workspace.root / INBOX
    lines = [
        json.dumps(
            {
                "id": f"{i:08x}",
                "action": "add",
                "text": f"p {i}",
                "by": "x",
                "at": "2026-12-03T06:30:00Z",
            }
        )
        for i in range(200)
    ]
    inbox.write_text("\n".join(lines) + "\n", encoding="utf-8")
    editor = subprocess.Popen(
        [sys.executable, "-c", EDITOR, str(store)], stdout=subprocess.PIPE, text=True
    )
    assert editor.stdout is not None and editor.stdout.readline() == "ready\n"
    r = workspace.cli("accept", "--all")
    assert editor.wait(timeout=30) == 0
    assert r.returncode == 0, r.stderr
    text = store.read_text(encoding="utf-8")
    assert "- saved by the editor\n" in text
    assert "- p 199\n" in text
