"""The pure doctor withholds an untrusted project's note text (SPEC §4, §9; issue 9 item 2)."""

from __future__ import annotations

import json

from memory_ls.core.doctor import (
    ConfigReport,
    StoreFacts,
    TrustReport,
    doctor_report,
    render_doctor_text,
)
from memory_ls.core.notes import parse
from memory_ls.core.recall import recall_plan
from tests.untrusted_notes import (
    NOTES,
    SHARED,
    WITHHELD,
    assert_nothing_leaks,
    global_store_text,
    project_store_text,
)

CONFIG: ConfigReport = {"inject": True, "maxInjectBytes": 512, "sources": [], "problems": []}


def _report(trusted: bool) -> tuple[dict[str, object], str]:
    project, global_ = parse(project_store_text()), parse(global_store_text())
    stores = {
        "project": StoreFacts("/p/.pi/memory.md", True, 4096, project),
        "global": StoreFacts("/a/memory.md", True, 100, global_),
    }
    trust: TrustReport = {
        "trusted": trusted,
        "rule": "resources",
        "reason": "untrusted: the project holds .pi/settings.json",
        "problems": [],
    }
    # A plan that leaves project notes out, as a caller that forgot the trust rule would
    # build: the doctor must withhold their text on its own.
    plan = recall_plan(project.notes, global_.notes, 512)
    assert any(n.scope == "project" for n in plan.omitted)
    report = doctor_report(stores, trust, CONFIG, plan)  # type: ignore[arg-type]
    return dict(report), render_doctor_text(report)


def test_untrusted_project_notes_are_withheld_in_json_and_text() -> None:
    report, text = _report(trusted=False)
    assert_nothing_leaks(json.dumps(report, ensure_ascii=False))
    assert_nothing_leaks(json.dumps(report))
    assert_nothing_leaks(text)
    assert WITHHELD in text


def test_untrusted_project_keeps_counts_and_line_numbers() -> None:
    report, text = _report(trusted=False)
    project = report["project"]
    assert isinstance(project, dict)
    assert project["notes"] == len(NOTES)
    assert project["blankBullets"] == 1
    assert project["tooLong"] == [WITHHELD]
    assert project["controlCharacters"] == [WITHHELD]
    assert project["hiddenUnicode"] == [WITHHELD] * 5
    assert project["duplicates"] == [
        {"first": WITHHELD, "second": WITHHELD, "firstLine": 3, "secondLine": 4},
        {"first": WITHHELD, "second": WITHHELD, "firstLine": 3, "secondLine": 5},
    ]
    assert report["crossScopeDuplicates"] == [{"project": WITHHELD, "global": SHARED}]
    recall = report["recall"]
    assert isinstance(recall, dict)
    left_out = [n for n in recall["omitted"] if n["scope"] == "project"]
    assert left_out and all(n["text"] == WITHHELD for n in left_out)
    assert f"line 5: Duplicate of the note on line 3: {WITHHELD}" in text


def test_trusted_project_is_quoted_as_before() -> None:
    report, _ = _report(trusted=True)
    project = report["project"]
    assert isinstance(project, dict)
    assert project["duplicates"][0]["first"] == NOTES[0]
    assert project["tooLong"] == [NOTES[6].strip()]
