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
from memory_ls.core.notes import parse_lines
from memory_ls.core.recall import recall_plan
from memory_ls.core.text import decode_for_display, display_path, split_text
from memory_ls.store.facts import invalid_utf8_position, read_disk_bytes
from memory_ls.store.paths import project_root_for, project_store_path, refused_project_store
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


def is_memory_path(path: Path) -> bool:
    """True for a path that ends in ``.pi/memory.md``."""
    return path.name == "memory.md" and path.parent.name == ".pi"


def lint_file(
    path: Path, runtime: MemoryRuntime | None, scope: Scope | None, real_store: str | None = None
) -> FileReport:
    """Check one file; ``runtime``/``scope`` give it a store's context (else file-only)."""
    read = read_disk_bytes(path, LINT_READ_LIMIT)
    if read.symlink:
        ctx = FileContext(scope=scope, symlink=True)
        return FileReport(str(path), [""], check_bullets([""], [], ctx))
    if read.error is not None:
        return FileReport(str(path), error=read.error)
    data = read.data
    text = decode_for_display(data)
    lines = split_text(text).lines
    parsed = parse_lines(lines)
    ctx_args: dict[str, object] = {
        "scope": scope,
        "size": read.size,
        "invalid_utf8_at": invalid_utf8_position(data, read.complete),
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
        if other == "global" or trust.trusted:
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

    findings = sort_findings([*findings, *similar_findings(parsed.bullets, DEFAULT_THRESHOLD)])
    return FileReport(str(path), lines, findings)


def lint_path(
    path: Path, agent_dir: str | None, trusted: bool | None, project: Path | None = None
) -> FileReport:
    """Check a file in the context its path implies.

    The global store is checked against ``project``'s store (default: the
    current directory's), for cross-scope duplicates and the recall budget.
    """
    refused = refused_project_store(Path(os.path.abspath(path)))
    if refused is not None:
        return _outside_project_report(path, refused[1])
    canonical = Path(os.path.realpath(path.parent)) / path.name
    if is_memory_path(canonical):
        runtime = MemoryRuntime(canonical.parent.parent, agent_dir=agent_dir, trusted=trusted)
        store = project_store_path(project_root_for(canonical.parent.parent))
        real = None if store == canonical else str(store)
        return lint_file(path, runtime, "project", real)
    runtime = MemoryRuntime(project or Path.cwd(), agent_dir=agent_dir, trusted=trusted)
    if canonical == Path(os.path.realpath(runtime.paths["global"].parent)) / "memory.md":
        return lint_file(path, runtime, "global")
    return lint_file(path, None, None)


def lint_stores(runtime: MemoryRuntime) -> list[FileReport]:
    """Check both stores of a project (a missing store has nothing to find)."""
    reports = []
    for scope in ("project", "global"):
        path = runtime.paths[scope]
        refused = runtime.store_refusal(scope)
        if refused is not None:
            reports.append(_outside_project_report(path, refused))
        elif os.path.lexists(path):
            reports.append(lint_file(path, runtime, scope))
    return reports


def _outside_project_report(path: Path, refusal: str) -> FileReport:
    """A project store whose ``.pi`` leads out of the project: reported, never read (SPEC §1)."""
    ctx = FileContext(scope="project", outside_project=refusal)
    return FileReport(str(path), [""], check_bullets([""], [], ctx))


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
