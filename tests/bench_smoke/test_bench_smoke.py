"""Smoke test of the benchmark harness (bench/): a tiny store, one edit per server.

The benchmark itself is `make bench`; this only keeps the harness from rotting.  Peers that
are not installed (bench/setup.sh) and a memory-ls server that does not exist yet are
skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from bench import run, servers, workload
from bench.servers import ServerSpec
from bench.session import SessionParams, quantile, run_session

PARAMS = SessionParams(
    edits=1, adds=1, gap=0.0, similar_timeout=1.0, checks_timeout=1.0, reply_timeout=20.0
)


@pytest.fixture
def tiny() -> Iterator[workload.Workspace]:
    ws = workload.make_workspace(workload.render_store(workload.generate_notes(30, seed=7)))
    yield ws
    workload.remove_workspace(ws)


def test_workload_is_deterministic_and_within_the_cap() -> None:
    assert workload.generate_notes(100) == workload.generate_notes(100)
    text = workload.store_text("4500")
    lines = text.split("\n")
    assert lines[0] == workload.HEADER and lines[1] == ""
    notes = [line[2:] for line in lines if line.startswith("- ")]
    assert len(notes) == 4500
    assert 250_000 <= len(text.encode()) <= workload.SIZE_CAP
    assert all(20 <= len(n) <= 200 for n in notes)
    keys = [n.lower().rstrip(".!?,;:").strip() for n in notes]
    assert 0.02 <= (len(keys) - len(set(keys))) / len(keys) <= 0.04
    assert any(ord(c) > 0xFFFF for n in notes for c in n)  # emoji outside the BMP
    assert any("\u4e00" <= c <= "\u9fff" for n in notes for c in n)  # CJK


def test_quantile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert quantile(values, 0.5) == 50.0
    assert quantile(values, 0.95) == 95.0
    assert quantile([], 0.5) is None


async def _one_session(spec: ServerSpec, ws: workload.Workspace) -> run.Summary:
    result = await run_session(spec, "tiny", 1, ws, PARAMS)
    assert result.error is None, result.error
    assert result.cold_start is not None and result.cold_start > 0
    assert result.open_diagnostics is not None
    assert len(result.edits) == 1 and result.edit_timeouts == 0
    assert result.peak_rss and result.peak_rss > 1_000_000
    summary = run.summarise(spec.name, [result])
    table = "\n".join(run.store_table("tiny", [summary]))
    assert "edit → diagnostics p50" in table
    return summary


async def test_reference_server_with_the_command_path(tiny: workload.Workspace) -> None:
    spec = servers.pygls_min(with_commands=True)
    spec = ServerSpec(name="memory-ls", argv=spec.argv, is_memory_ls=True)  # a stand-in
    summary = await _one_session(spec, tiny)
    assert summary.add_p50 is not None and summary.add_errors == 0
    assert "Bench note" in tiny.store_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("make", [servers.rumdl, servers.vscode_md], ids=["rumdl", "vscode-md"])
async def test_peer(make: object, tiny: workload.Workspace) -> None:
    assert callable(make)
    spec = make()
    if spec.missing:
        # .ci/run installs the peers; only a local run without them may skip.
        if os.environ.get("CI") == "true":
            pytest.fail(f"{spec.missing} (CI=true: run bench/setup.sh)")
        pytest.skip(spec.missing)
    await _one_session(spec, tiny)


async def test_the_publish_floor_serves_memory_ls_own_publish(tiny: workload.Workspace) -> None:
    """``bench.floor`` captures what memory-ls publishes for a keystroke; each way of the
    stub serves it (the same diagnostics) through a whole session."""
    from bench import floor

    if servers.memory_ls().missing:
        pytest.skip(servers.memory_ls().missing)
    canned = await floor.capture_in(tiny, "tiny", typed=2, settle=0.3)
    assert canned.count(b"@VERSION@") == 1 and b"@URI@" in canned
    sample = canned.replace(b"@VERSION@", b"2").replace(b"@URI@", b'"file:///x"')
    diagnostics = json.loads(sample)["params"]["diagnostics"]
    assert diagnostics  # the tiny store has duplicates
    path = tiny.root.parent / "publish.json"
    path.write_bytes(canned)
    specs = floor.floor_specs(path)
    assert [s.name for s in specs] == list(floor.VARIANTS)
    for spec in specs:
        summary = await _one_session(spec, tiny)
        assert summary.edit_diagnostics == len(diagnostics)
        assert summary.sync == "push, incremental"
    config, _, _ = run.parse_args(["--quick"])
    assert config.floor and not run.parse_args(["--no-floor"])[0].floor


async def test_memory_ls(tiny: workload.Workspace) -> None:
    spec = servers.memory_ls()
    if spec.missing:
        pytest.skip(spec.missing)
    summary = await _one_session(spec, tiny)
    assert summary.add_p50 is not None and summary.add_errors == 0


def test_the_paraphrase_store_is_paraphrase_heavy() -> None:
    """Issue 11's store: 4,500 notes, >= 1,000 variants of templates, >= 700 similar pairs."""
    from memory_ls.core.notes import parse
    from memory_ls.core.similar import similar_pairs

    text = workload.store_text("paraphrase")
    assert workload.store_text("paraphrase") == text
    assert len(text.encode()) <= workload.BIG_STORE_TARGET_BYTES
    parsed = parse(text)
    assert len(parsed.notes) == 4500
    assert workload.PARAPHRASE_VARIANTS >= 1000
    keys = list(dict.fromkeys(b.key for b in parsed.bullets if b.key))
    pairs = similar_pairs(keys, 85.0)
    assert 700 <= len(pairs) <= 2000  # published in full: under the server's SIMILAR_LIMIT


def test_the_short_note_store_holds_ten_thousand_notes_under_the_cap() -> None:
    text = workload.store_text("10000")
    notes = [line[2:] for line in text.split("\n") if line.startswith("- ")]
    assert len(notes) == 10_000
    assert len(text.encode()) <= workload.BIG_STORE_TARGET_BYTES
    assert all(12 <= len(n) <= 33 for n in notes)  # 30, plus a near-duplicate's "..."


def test_the_tree_scenario_repeats_its_store_with_scripts_to_judge() -> None:
    """``4500tree`` is ``4500`` (same count, same note typed into) with script mentions."""
    from bench.session import _typing_target

    base, tree = workload.store_notes("4500"), workload.store_notes("4500tree")
    assert len(tree) == len(base) == 4500
    changed = [i for i, (a, b) in enumerate(zip(base, tree, strict=True)) if a != b]
    assert len(changed) == 45 - 1  # every 100th but the one typed into
    assert all("run " in tree[i] or "make " in tree[i] or "pnpm " in tree[i] for i in changed)
    assert _typing_target(workload.store_text("4500tree")) == _typing_target(
        workload.store_text("4500")
    )
    assert len(workload.store_text("4500tree").encode()) <= workload.BIG_STORE_TARGET_BYTES
    config, _, _ = run.parse_args(["--quick", "--stores", "4500,4500tree"])
    # The tree scenario brings the same store with SPEC §13's checks off: issue 13's
    # criterion compares the two.
    assert config.stores == ["4500", "4500tree-off", "4500tree"]
    assert "4500tree" not in run.parse_args([])[0].stores  # run only when asked for


def test_the_checks_off_scenario_is_its_tree_scenario_with_section_13_off() -> None:
    from bench.session import SECTION_13_CODES, _initialize_params

    assert workload.store_text("4500tree-off") == workload.store_text("4500tree")
    assert workload.store_notes("4500tree-off") == workload.store_notes("4500tree")
    spec = servers.memory_ls()
    ws = workload.make_workspace("- a note\n")
    (ws.root / "app.py").write_text("", encoding="utf-8")  # a project, not an empty one
    try:
        options = _initialize_params(spec, ws, "4500tree-off")["initializationOptions"]
        assert options["severity"] == dict.fromkeys(sorted(SECTION_13_CODES), "off")
        assert options["trusted"] is True  # the server's own options are kept
        on = _initialize_params(spec, ws, "4500tree")["initializationOptions"]
        assert "severity" not in (on or {})
    finally:
        workload.remove_workspace(ws)


async def test_memory_ls_in_a_project_tree() -> None:
    """A memory-ls session in a (small) project tree measures the §13 findings, and the
    report sets a tree scenario beside the store it repeats."""
    spec = servers.memory_ls()
    if spec.missing:
        pytest.skip(spec.missing)
    notes = workload.with_script_mentions(workload.generate_notes(60, seed=7), every=10)
    ws = workload.make_workspace(workload.render_store(notes))
    try:
        workload.add_project_tree(ws.root, notes, files=40, repeats=notes[3:5])
        agents = (ws.root / "AGENTS.md").read_text(encoding="utf-8")
        assert f"- {notes[3]}\n" in agents and len(agents.splitlines()) == 100
        assert workload.project_files(ws.root) >= 44
        params = SessionParams(edits=1, adds=0, gap=0.0, similar_timeout=1.0, reply_timeout=20.0)
        result = await run_session(spec, "tinytree", 1, ws, params)
    finally:
        workload.remove_workspace(ws)
    assert result.error is None, result.error
    assert result.checks is not None and result.checks_count  # a stale script at least
    summary = run.summarise(spec.name, [result])
    assert "§13 project findings after open" in "\n".join(run.store_table("t", [summary]))
    table = run.tree_table("tiny", "tinytree", {"tiny": [summary], "tinytree": [summary]}, {})
    assert table[0] == "| figure | tiny | tinytree | difference | tinytree / tiny |"
    assert any(row.startswith("| edit → diagnostics p50 |") and "+0.0 ms" in row for row in table)


def test_runs_get_bytecode_as_an_install_has_it() -> None:
    """With PYTHONDONTWRITEBYTECODE (set on this machine) an editable install compiled
    every module on every start: the CLI and cold-start figures counted the compiler."""
    ws = workload.make_workspace("- a note\n")
    try:
        env = ws.env({"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin"})
        assert "PYTHONDONTWRITEBYTECODE" not in env and env["PATH"] == "/usr/bin"
    finally:
        workload.remove_workspace(ws)


def test_message_cost_runs_the_whole_server_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import message

    assert message.main(["--stores", "4500", "--edits", "10"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "4500"
    p50, p95 = (float(c.removesuffix(" ms")) for c in cells[1:])
    assert 0 < p50 <= p95
