"""``check`` and ``doctor`` quote notes with their hidden characters escaped: a note holding
U+202E must not reorder the line a person reads in a terminal."""

from __future__ import annotations

import json

from tests import hidden_notes
from tests.conftest import Workspace
from tests.hidden_notes import EVIL, SHOWN


def test_check_quotes_notes_escaped(workspace: Workspace) -> None:
    hidden_notes.write(workspace)
    r = workspace.cli("check", "--trusted")
    assert r.returncode == 1, r.stderr
    assert "\u202e" not in r.stdout and "\u202c" not in r.stdout, r.stdout
    lines = r.stdout.splitlines()
    assert any(f" duplicate Duplicate of the note on line 3: {SHOWN}" in x for x in lines)
    assert any(" similar Similar to the note on line 3 " in x and SHOWN in x for x in lines)
    assert any(f" cross-scope-duplicate Also in global memory: {SHOWN}" in x for x in lines)
    found = json.loads(workspace.cli("check", "--trusted", "--format", "json").stdout)
    assert "\u202e" not in json.dumps(found, ensure_ascii=False)


def test_the_doctor_lists_notes_escaped_and_keeps_them_in_its_json(workspace: Workspace) -> None:
    hidden_notes.write(workspace)
    r = workspace.cli("doctor", "--trusted")
    assert r.returncode == 0, r.stderr
    assert "\u202e" not in r.stdout and "\u202c" not in r.stdout, r.stdout
    assert f"    - {SHOWN}" in r.stdout  # hidden characters: the notes holding them
    assert f"  line 4: Duplicate of the note on line 3: {SHOWN}" in r.stdout
    assert f"in both scopes: {SHOWN}" in r.stdout
    report = json.loads(workspace.cli("doctor", "--trusted", "--json").stdout)
    assert report["project"]["hiddenUnicode"][0] == EVIL  # the data: the note as it is


def test_import_and_list_show_notes_escaped_and_keep_them_as_they_are(
    workspace: Workspace,
) -> None:
    source = workspace.root / "CLAUDE-memory.md"
    source.write_text(f"- {EVIL}\n- plain note\n", encoding="utf-8")
    r = workspace.cli("import", str(source), "--trusted")
    assert r.returncode == 0, r.stderr
    assert "\u202e" not in r.stdout, r.stdout
    assert r.stdout.splitlines()[1:] == [f"+ {SHOWN}", "+ plain note"]
    r = workspace.cli("import", str(source), "--trusted", "--scope", "global", "--propose")
    assert f"+ {SHOWN}" in r.stdout.splitlines() and "\u202e" not in r.stdout
    again = workspace.cli("import", str(source), "--trusted")
    assert f"= {SHOWN} (already stored)" in again.stdout.splitlines()
    assert "\u202e" not in again.stdout
    listed = workspace.cli("list", "--trusted")
    assert f"- {SHOWN}" in listed.stdout.splitlines() and "\u202e" not in listed.stdout
    # What the model gets and what is stored keep the note as it is.
    assert json.loads(workspace.cli("list", "--trusted", "--json").stdout)["project"][0] == EVIL
    assert f"- {EVIL}\n" in workspace.cli("inject", "--trusted").stdout
    assert f"- {EVIL}\n" in workspace.text("project")


def test_a_note_that_is_not_there_is_quoted_escaped(workspace: Workspace) -> None:
    # "No project memory note matches: ..." quotes what was asked for: a person reads it.
    workspace.write("project", ["use pnpm"])
    for verb in (["forget", EVIL], ["update", EVIL, "--to", "x"], ["move", EVIL]):
        r = workspace.cli(*verb, "--scope", "project", "--trusted")
        assert r.returncode == 1, r.stderr
        assert f"No project memory note matches: {SHOWN}" in r.stderr + r.stdout, r.stderr
        assert "\u202e" not in r.stderr + r.stdout
