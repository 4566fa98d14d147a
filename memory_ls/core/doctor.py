"""The doctor: one read-only report on both stores, trust, config and recall (SPEC §9).

:func:`doctor_report` builds the JSON-able report from plain data and the same
findings and recall plan the editor shows; :func:`render_doctor_text` is its
readable form. Both come from one model, so they cannot disagree.

For an untrusted project the report keeps the project store's counts and line
numbers but never its text (SPEC §4): the doctor's output reaches the model
(``memory://doctor``), and the notes are whatever the repository's author wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memory_ls.core.checks import (
    STALE_AND_CONFLICT_CODES,
    Finding,
    duplicate_message,
    duplicate_pairs,
    key_index,
    line_findings,
)
from memory_ls.core.models import (
    ConfigReport,
    CrossScopePair,
    DoctorReport,
    DuplicatePair,
    FileType,
    RecallReport,
    ReviewFinding,
    Scope,
    ScopeReport,
    TrustReport,
)
from memory_ls.core.notes import ParsedFile
from memory_ls.core.recall import RecallPlan
from memory_ls.core.render import trust_summary
from memory_ls.core.text import MAX_STORE_BYTES, display_path, escape_unseen

WITHHELD = "(text withheld: the project is untrusted)"
"""What the doctor shows in place of an untrusted project's note (SPEC §4)."""


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
    file_type: FileType | None = None
    """What is at the path when it is not a regular file (then it is never read)."""
    findings: tuple[Finding, ...] = ()
    """SPEC §13's findings on the store (the shell computes them, as ``check`` does)."""
    refused: str | None = None
    """Why the store is refused and never read (SPEC §1: its ``.pi`` leads out of the
    project, or its file is the global store's), in the words every refusal uses."""


def _scope_report(facts: StoreFacts, withhold: bool) -> ScopeReport:
    """One store's report; ``withhold`` puts :data:`WITHHELD` wherever a note would be quoted."""

    def quote(note: str) -> str:
        return WITHHELD if withhold else note

    by_code: dict[str, list[str]] = {"too-long": [], "control-characters": [], "hidden-unicode": []}
    blank = 0
    for b in facts.parsed.bullets:
        for f in line_findings(b):
            if f.code == "blank-note":
                blank += 1
            else:
                by_code[f.code].append(quote(b.note))
    pairs: list[DuplicatePair] = [
        {
            "first": quote(first.note),
            "second": quote(later.note),
            "firstLine": first.line + 1,
            "secondLine": later.line + 1,
        }
        for first, later in duplicate_pairs(facts.parsed.bullets)
    ]
    review: list[ReviewFinding] = [
        {
            "line": f.line + 1,
            "code": f.code,
            "severity": f.severity,
            # Every §13 message quotes a note, a path from one, or a line of the
            # repository's own instruction files: all the repository author's words.
            "message": WITHHELD if withhold else f.message,
        }
        for f in facts.findings
        if f.code in STALE_AND_CONFLICT_CODES
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
        "staleAndConflicts": review,
    }
    if facts.error:
        report["error"] = facts.error
    if facts.write_error and not facts.error:
        report["readOnlyReason"] = facts.write_error
    if facts.file_type is not None:
        report["fileType"] = facts.file_type
    if facts.refused is not None:
        report["refused"] = facts.refused
    return report


def doctor_report(
    stores: Mapping[Scope, StoreFacts],
    trust: TrustReport,
    config: ConfigReport,
    plan: RecallPlan,
) -> DoctorReport:
    """Build the report from both stores' facts, trust, config and the recall plan.

    When ``trust`` says the project is untrusted, no project note's text is in the
    report, whatever the facts and the plan hold: only counts and line numbers.
    """
    withhold = not trust["trusted"]
    project = _scope_report(stores["project"], withhold)
    global_ = _scope_report(stores["global"], False)
    global_keys = key_index(stores["global"].parsed.bullets)
    cross: list[CrossScopePair] = [
        # The global side is the user's own note, already recalled: it may be shown.
        {"project": WITHHELD if withhold else note, "global": global_keys[key]}
        for key, note in key_index(stores["project"].parsed.bullets).items()
        if key in global_keys
    ]
    inject = plan.as_inject_result()  # the same figures memory.inject reports
    recall: RecallReport = {
        "inject": inject["inject"],
        "used": inject["bytes"],
        "maxInjectBytes": inject["maxInjectBytes"],
        "included": inject["included"],
        "omitted": [
            {"scope": n["scope"], "text": WITHHELD} if withhold and n["scope"] == "project" else n
            for n in inject["omitted"]
        ],
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
        for code, what in _REVIEW_PROBLEMS.items():
            # Notes, not findings: a note may name two stale paths or conflict with three.
            n = len({f["line"] for f in rep["staleAndConflicts"] if f["code"] == code})
            if n:
                problems.append(f"{scope}: {n} {what}")
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


_REVIEW_PROBLEMS = {
    "stale-path": "note(s) naming a path that does not exist",
    "stale-script": "note(s) running a script nothing defines",
    "instruction-duplicate": "note(s) an instruction file already says",
    "conflict": "conflicting note(s)",
}
"""How the problems list counts each §13 code (the notes it flags, one per line)."""


FILE_TYPE_NAMES: dict[FileType, str] = {
    "directory": "a directory",
    "fifo": "a FIFO (named pipe)",
    "socket": "a socket",
    "character-device": "a character device",
    "block-device": "a block device",
    "symlink": "a symlink",
    "other": "something",
}
"""How the doctor's text names what is at a store path instead of a regular file."""


def _scope_lines(name: str, rep: ScopeReport) -> list[str]:
    lines = [f"{name}: {display_path(rep['path'])}"]
    # Said on the store's own line ("cannot be read: why"), not again on an ERROR line.
    unreachable = (
        "error" in rep and not rep["exists"] and "refused" not in rep and "fileType" not in rep
    )
    if "refused" in rep:
        # Not "missing": the file may well be there (it is the global store's, maybe),
        # but it is not this scope's to read, and its size and notes are not its own.
        # Why follows on the ERROR line, in the refusal's own words.
        lines.append("  refused: never read, recalled or written")
    elif "fileType" in rep:
        # Its size and note count would only confuse: nothing there is read.
        lines.append(f"  {FILE_TYPE_NAMES[rep['fileType']]}, not a regular file: never read")
    elif unreachable:
        # Not "missing (reads as empty)": the way to it is broken (an agent dir or `.pi`
        # that loops, is a file, or links to nothing), so nothing there is read or written.
        lines.append(f"  cannot be read: {_reason(rep['path'], rep['error'])}")
    else:
        state = "exists" if rep["exists"] else "missing (reads as empty)"
        lines.append(f"  {state}, {rep['bytes']} of {rep['cap']} bytes, {rep['notes']} note(s)")
    if "error" in rep and not unreachable:
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
            if all(n == WITHHELD for n in notes):
                lines.append(f"    {WITHHELD}")  # once, not once per note
            else:
                lines.extend(f"    - {escape_unseen(_clip(n))}" for n in notes)
    for p in rep["duplicates"]:
        # Word for word what `check` says on the later line (SPEC §9).
        message = duplicate_message(p["firstLine"], _clip(p["first"]))
        lines.append(f"  line {p['secondLine']}: {message}")
    for f in rep["staleAndConflicts"]:
        # Word for word what `check` says on that line (or withheld).
        lines.append(f"  line {f['line']}: {f['code']} {f['message']}")
    return lines


def _reason(path: str, error: str) -> str:
    """``error`` without its ``Cannot read <path>: `` (the line above names the path)."""
    return error.removeprefix(f"Cannot read {display_path(path)}: ")


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
        lines.append(f"in both scopes: {escape_unseen(_clip(pair['project']))}")
    lines.append(f"trust: {trust_summary(trust['trusted'], trust['rule'], trust['reason'])}")
    lines.append(
        f"config: inject={'true' if config['inject'] else 'false'}, "
        f"maxInjectBytes={config['maxInjectBytes']}"
    )
    for src in config["sources"]:
        why = f" ({src['why']})" if src.get("why") else ""
        lines.append(f"  {src['status']}: {display_path(src['path'])}{why}")
    if recall["inject"]:
        lines.append(
            f"recall: {recall['used']} of {recall['maxInjectBytes']} bytes, "
            f"{recall['included']} note(s) in, {len(recall['omitted'])} left out"
        )
        for n in recall["omitted"]:
            lines.append(f"  left out ({n['scope']}): {escape_unseen(_clip(n['text']))}")
    else:
        lines.append("recall: off (inject: false)")
    lines.append("")
    if report["problems"]:
        lines.append(f"{len(report['problems'])} problem(s):")
        lines.extend(f"- {p}" for p in report["problems"])
    else:
        lines.append("No problems found.")
    return "\n".join(lines) + "\n"
