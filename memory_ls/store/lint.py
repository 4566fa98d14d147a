"""Findings for files on disk: the context a path implies, then the pure checks.

Used by ``memory-ls check``. A ``.pi/memory.md`` is checked as its project's
store (or flagged as not being it), the global store as the global store, and
any other file with the file-only checks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memory_ls.core.checks import FileContext, Finding, check_bullets, key_index, sort_findings
from memory_ls.core.models import Scope, other_scope
from memory_ls.core.notes import ParsedFile, parse_bullets
from memory_ls.core.recall import recall_plan
from memory_ls.core.text import decode_for_display, display_path, split_text
from memory_ls.store.facts import FileFacts, memory_file_facts
from memory_ls.store.paths import (
    agent_dir_for,
    canonical_path,
    classify_store_path,
    global_store_path,
)
from memory_ls.store.runtime import MemoryRuntime

LINT_READ_LIMIT = 16 * 1024 * 1024
"""Files are read up to this size for checking (the store cap itself is far lower)."""


@dataclass(frozen=True, slots=True)
class FileReport:
    """The findings for one file, with its lines for rendering columns."""

    path: str
    lines: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    """Why the file could not be checked at all (missing, unreadable)."""


def lint_file(
    path: Path, runtime: MemoryRuntime | None, scope: Scope | None, real_store: str | None = None
) -> FileReport:
    """Check one file; ``runtime``/``scope`` give it a store's context (else file-only).

    Whether it is a refused project store is judged from ``path`` as written.
    """
    return _report(memory_file_facts(path, LINT_READ_LIMIT), runtime, scope, real_store)


def _report(
    facts: FileFacts, runtime: MemoryRuntime | None, scope: Scope | None, real_store: str | None
) -> FileReport:
    """The findings for a file the store layer has looked at."""
    path = facts.path
    if facts.outside_project is not None:
        # Reported, never read (SPEC §1).
        ctx = FileContext(scope="project", outside_project=facts.outside_project)
        return FileReport(str(path), [""], check_bullets([""], [], ctx))
    if facts.symlink:
        ctx = FileContext(scope=scope, symlink=True)
        return FileReport(str(path), [""], check_bullets([""], [], ctx))
    if facts.error is not None:
        return FileReport(str(path), error=facts.error)
    text = decode_for_display(facts.data)
    lines = split_text(text).lines
    # Every bullet is read (the checks): the one-loop cold parse, not one cached call a line.
    parsed = ParsedFile(lines, [b for b in parse_bullets(lines) if b is not None], None, None)
    ctx_args: dict[str, object] = {
        "scope": scope,
        "size": facts.size,
        "invalid_utf8_at": facts.invalid_utf8_at,
        "real_store": real_store,
    }
    plan = None
    other_keys: dict[str, str] = {}
    other_path = ""
    if runtime is not None and scope is not None:
        trust = runtime.trust()
        config = runtime.config()
        ctx_args.update(inject=config.inject, trusted=trust.trusted, trust_reason=trust.summary)
        other = other_scope(scope)
        other_view = runtime.view(other)
        other_path = str(runtime.paths[other])
        one_file = canonical_path(runtime.paths[other]) == canonical_path(runtime.paths[scope])
        if (other == "global" or trust.trusted) and not one_file:
            # (Both stores one file, by agentDir: its notes are not "also" in the other.)
            other_keys = key_index(other_view.parsed.bullets)
        mine = parsed.notes if (scope == "global" or trust.trusted) else []
        theirs = runtime.recall_notes(other)
        project, global_ = (mine, theirs) if scope == "project" else (theirs, mine)
        plan = recall_plan(project, global_, config.max_inject_bytes, config.inject)
    ctx = FileContext(**ctx_args)  # type: ignore[arg-type]
    findings = check_bullets(
        lines, parsed.bullets, ctx, plan=plan, other_keys=other_keys, other_path=other_path
    )
    from memory_ls.core.similar import DEFAULT_THRESHOLD, similar_findings

    findings = [*findings, *similar_findings(parsed.bullets, DEFAULT_THRESHOLD)]
    if runtime is not None and scope is not None and real_store is None:
        # SPEC §13: stale mentions, instruction-file repeats and conflicting notes.
        from memory_ls.store.project_files import stale_and_conflict_findings

        other_parsed = runtime.view("global").parsed if scope == "project" else None
        findings.extend(
            stale_and_conflict_findings(
                runtime.project_root,
                runtime.agent_dir,
                scope,
                parsed,
                other_parsed,
                str(runtime.paths["global"]),
            )
        )
    return FileReport(str(path), lines, sort_findings(findings))


def lint_path(
    path: Path, agent_dir: str | None, trusted: bool | None, project: Path | None = None
) -> FileReport:
    """Check a file in the context its path implies (the store layer classifies it).

    The global store is checked against ``project``'s store (default: the
    current directory's), for cross-scope duplicates and the recall budget.
    """
    global_store = global_store_path(agent_dir_for(agent_dir))
    found = classify_store_path(Path(os.path.abspath(path)), global_store)
    if found is None:
        return lint_file(path, None, None)
    if found.root is None:
        runtime = MemoryRuntime(project or Path.cwd(), agent_dir=agent_dir, trusted=trusted)
        return lint_file(path, runtime, "global")
    runtime = MemoryRuntime(found.root, agent_dir=agent_dir, trusted=trusted)
    return lint_file(path, runtime, "project", found.real_store)


def lint_stores(runtime: MemoryRuntime) -> list[FileReport]:
    """Check both stores of a project (a missing store has nothing to find)."""
    reports = []
    for scope in ("project", "global"):
        root = runtime.project_root if scope == "project" else None
        facts = memory_file_facts(runtime.paths[scope], LINT_READ_LIMIT, root)
        if facts.exists or facts.outside_project is not None:
            reports.append(_report(facts, runtime, scope, None))
    return reports


def _severity_level(severity: str) -> str:
    return {"error": "error", "warning": "warning"}.get(severity, "note")


def _sarif_uri(path: str) -> str:
    """A SARIF artifact URI: ``file://`` for an absolute path, relative as given otherwise."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    from urllib.parse import quote

    return quote(Path(path).as_posix())


def render_reports(reports: list[FileReport], fmt: str) -> tuple[str, bool]:
    """Render findings as ``text``, ``json`` or ``sarif``; also say whether any fails.

    Lines and columns are 1-based, columns in characters (code points). Only an
    error or a warning fails the check; information and hints do not.
    """
    import json

    failing = any(f.severity in ("error", "warning") for r in reports for f in r.findings)
    rows = [
        {
            "path": r.path,
            "line": f.line + 1,
            "column": f.start + 1,
            "endLine": f.end_line + 1,
            "endColumn": f.end + 1,
            "code": f.code,
            "severity": f.severity,
            "message": f.message,
        }
        for r in reports
        for f in r.findings
    ]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False), failing
    if fmt == "sarif":
        from memory_ls import __version__
        from memory_ls.core.checks import CODES

        sarif = {
            "version": "2.1.0",
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "runs": [
                {
                    "tool": {
                        "driver": {
                            "name": "memory-ls",
                            "version": __version__,
                            "rules": [
                                {"id": code, "defaultConfiguration": {"level": _severity_level(s)}}
                                for code, s in CODES.items()
                            ],
                        }
                    },
                    "results": [
                        {
                            "ruleId": row["code"],
                            "level": _severity_level(str(row["severity"])),
                            "message": {"text": row["message"]},
                            "locations": [
                                {
                                    "physicalLocation": {
                                        "artifactLocation": {"uri": _sarif_uri(str(row["path"]))},
                                        "region": {
                                            "startLine": row["line"],
                                            "startColumn": row["column"],
                                            "endLine": row["endLine"],
                                            "endColumn": row["endColumn"],
                                        },
                                    }
                                }
                            ],
                        }
                        for row in rows
                    ],
                }
            ],
        }
        return json.dumps(sarif, indent=2, ensure_ascii=False), failing
    text = "\n".join(
        f"{display_path(str(row['path']))}:{row['line']}:{row['column']}: "
        f"{row['code']} {row['message']}"
        for row in rows
    )
    return text, failing
