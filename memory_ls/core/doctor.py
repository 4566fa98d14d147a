"""The doctor: one read-only report on both stores, trust, config and recall (SPEC §9).

:func:`doctor_report` builds the JSON-able report from plain data and the same
findings and recall plan the editor shows; :func:`render_doctor_text` is its
readable form. Both come from one model, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memory_ls.core.checks import duplicate_findings, key_index, line_findings
from memory_ls.core.models import (
    ConfigReport,
    CrossScopePair,
    DoctorReport,
    DuplicatePair,
    RecallReport,
    Scope,
    ScopeReport,
    TrustReport,
)
from memory_ls.core.notes import ParsedFile
from memory_ls.core.recall import RecallPlan
from memory_ls.core.text import MAX_STORE_BYTES


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the doctor needs to know of one store."""

    path: str
    exists: bool
    size: int
    parsed: ParsedFile
    error: str | None = None
    """Why the store cannot be read."""
    write_error: str | None = None
    """Why the store cannot be changed (e.g. invalid UTF-8)."""


def _scope_report(facts: StoreFacts) -> ScopeReport:
    by_code: dict[str, list[str]] = {"too-long": [], "control-characters": [], "hidden-unicode": []}
    blank = 0
    for b in facts.parsed.bullets:
        for f in line_findings(b):
            if f.code == "blank-note":
                blank += 1
            else:
                by_code[f.code].append(b.note)
    pairs: list[DuplicatePair] = [
        {
            "first": str(f.data["first"]),
            "second": str(f.data["note"]),
            "firstLine": int(str(f.data["firstLine"])) + 1,
            "secondLine": f.line + 1,
        }
        for f in duplicate_findings(facts.parsed.bullets)
    ]
    report: ScopeReport = {
        "path": facts.path,
        "exists": facts.exists,
        "bytes": facts.size,
        "cap": MAX_STORE_BYTES,
        "notes": len(facts.parsed.notes),
        "blankBullets": blank,
        "tooLong": by_code["too-long"],
        "controlCharacters": by_code["control-characters"],
        "hiddenUnicode": by_code["hidden-unicode"],
        "duplicates": pairs,
    }
    if facts.error:
        report["error"] = facts.error
    if facts.write_error and not facts.error:
        report["readOnlyReason"] = facts.write_error
    return report


def doctor_report(
    stores: Mapping[Scope, StoreFacts],
    trust: TrustReport,
    config: ConfigReport,
    plan: RecallPlan,
) -> DoctorReport:
    """Build the report from both stores' facts, trust, config and the recall plan."""
    project, global_ = _scope_report(stores["project"]), _scope_report(stores["global"])
    global_keys = key_index(stores["global"].parsed.bullets)
    cross: list[CrossScopePair] = [
        {"project": note, "global": global_keys[key]}
        for key, note in key_index(stores["project"].parsed.bullets).items()
        if key in global_keys
    ]
    inject = plan.as_inject_result()  # the same figures memory.inject reports
    recall: RecallReport = {
        "inject": inject["inject"],
        "used": inject["bytes"],
        "maxInjectBytes": inject["maxInjectBytes"],
        "included": inject["included"],
        "omitted": inject["omitted"],
    }
    problems: list[str] = []
    for scope, rep in (("project", project), ("global", global_)):
        if "error" in rep:
            problems.append(f"{scope}: {rep['error']}")
        if "readOnlyReason" in rep:
            problems.append(f"{scope}: {rep['readOnlyReason']}")
        if rep["duplicates"]:
            problems.append(f"{scope}: {len(rep['duplicates'])} duplicate pair(s)")
        if rep["tooLong"]:
            problems.append(f"{scope}: {len(rep['tooLong'])} note(s) over 500 characters")
        if rep["blankBullets"]:
            problems.append(f"{scope}: {rep['blankBullets']} blank bullet(s)")
        if rep["controlCharacters"]:
            problems.append(f"{scope}: {len(rep['controlCharacters'])} note(s) with controls")
        if rep["hiddenUnicode"]:
            problems.append(f"{scope}: {len(rep['hiddenUnicode'])} note(s) with hidden characters")
    if cross:
        problems.append(f"{len(cross)} note(s) in both scopes")
    if recall["omitted"]:
        problems.append(f"recall leaves {len(recall['omitted'])} note(s) out")
    problems.extend(trust["problems"])
    problems.extend(config["problems"])
    return {
        "project": project,
        "global": global_,
        "crossScopeDuplicates": cross,
        "trust": trust,
        "config": config,
        "recall": recall,
        "problems": problems,
    }


def _scope_lines(name: str, rep: ScopeReport) -> list[str]:
    state = "exists" if rep["exists"] else "missing (reads as empty)"
    lines = [
        f"{name}: {rep['path']}",
        f"  {state}, {rep['bytes']} of {rep['cap']} bytes, {rep['notes']} note(s)",
    ]
    if "error" in rep:
        lines.append(f"  ERROR: {rep['error']}")
    if "readOnlyReason" in rep:
        lines.append(f"  read-only: {rep['readOnlyReason']}")
    if rep["blankBullets"]:
        lines.append(f"  blank bullets: {rep['blankBullets']}")
    for label, key in (
        ("over 500 characters", "tooLong"),
        ("control characters", "controlCharacters"),
        ("hidden characters", "hiddenUnicode"),
    ):
        notes: list[str] = rep[key]  # type: ignore[literal-required]
        if notes:
            lines.append(f"  {label}: {len(notes)}")
            lines.extend(f"    - {_clip(n)}" for n in notes)
    for p in rep["duplicates"]:
        lines.append(
            f"  duplicate: line {p['secondLine']} repeats line {p['firstLine']}: {_clip(p['second'])}"
        )
    return lines


def _clip(note: str, width: int = 100) -> str:
    return note if len(note) <= width else note[: width - 1] + "…"


def render_doctor_text(report: DoctorReport) -> str:
    """The readable form of the report (markdown-friendly plain text)."""
    trust, config, recall = report["trust"], report["config"], report["recall"]
    lines = ["memory-ls doctor", ""]
    lines += _scope_lines("project", report["project"])
    lines += _scope_lines("global", report["global"])
    lines.append("")
    for pair in report["crossScopeDuplicates"]:
        lines.append(f"in both scopes: {_clip(pair['project'])}")
    verdict = "trusted" if trust["trusted"] else "untrusted"
    lines.append(f"trust: {verdict} (rule: {trust['rule']}) - {trust['reason']}")
    lines.append(
        f"config: inject={'true' if config['inject'] else 'false'}, "
        f"maxInjectBytes={config['maxInjectBytes']}"
    )
    for src in config["sources"]:
        why = f" ({src['why']})" if src.get("why") else ""
        lines.append(f"  {src['status']}: {src['path']}{why}")
    if recall["inject"]:
        lines.append(
            f"recall: {recall['used']} of {recall['maxInjectBytes']} bytes, "
            f"{recall['included']} note(s) in, {len(recall['omitted'])} left out"
        )
        for n in recall["omitted"]:
            lines.append(f"  left out ({n['scope']}): {_clip(n['text'])}")
    else:
        lines.append("recall: off (inject: false)")
    lines.append("")
    if report["problems"]:
        lines.append(f"{len(report['problems'])} problem(s):")
        lines.extend(f"- {p}" for p in report["problems"])
    else:
        lines.append("No problems found.")
    return "\n".join(lines) + "\n"
