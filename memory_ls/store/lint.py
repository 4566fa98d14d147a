"""Findings for files on disk: the context a path implies, then the pure checks.

Used by ``memory-ls check``. A ``.pi/memory.md`` is checked as its project's
store (or flagged as not being it), the global store as the global store, and
any other file with the file-only checks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memory_ls.core.checks import FileContext, Finding, check_bullets, key_index, sort_findings
from memory_ls.core.notes import Bullet, ParsedFile, parse_bullets, remember
from memory_ls.core.recall import RecallPlan, recall_plan
from memory_ls.core.records import field, record
from memory_ls.core.scopes import other_scope
from memory_ls.core.text import decode_for_display, display_path, split_text
from memory_ls.store.facts import FileFacts, memory_file_facts
from memory_ls.store.files import unreachable_store
from memory_ls.store.paths import (
    StorePath,
    agent_dir_for,
    as_written,
    canonical_path,
    classify_store_path,
    global_store_path,
)
from memory_ls.store.runtime import MemoryRuntime

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from memory_ls.core.scopes import Scope
    from memory_ls.store.similar_pass import SimilarWorker

LINT_READ_LIMIT = 16 * 1024 * 1024
"""Files are read up to this size for checking (the store cap itself is far lower)."""


@record
class FileReport:
    """The findings for one file, with its lines for rendering columns."""

    path: str
    lines: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    """Why the file could not be checked at all (missing, unreadable)."""


def lint_file(
    path: Path,
    runtime: MemoryRuntime | None,
    scope: Scope | None,
    real_store: str | None = None,
    run: _Run | None = None,
) -> FileReport:
    """Check one file; ``runtime``/``scope`` give it a store's context (else file-only).

    Whether it is a refused project store is judged from ``path`` as written. ``run``:
    the ``check`` of several files this one is part of (else its own).
    """
    named = runtime.paths["global"] if runtime is not None and scope == "global" else None
    facts = memory_file_facts(path, LINT_READ_LIMIT, None, named)
    if run is not None:
        return _start_report(facts, runtime, scope, real_store, run).finish()
    with _Run() as run:
        return _start_report(facts, runtime, scope, real_store, run).finish()


class _Run:
    """One ``check`` of one or more files: whether the ``similar`` passes get a thread, and
    what one file's checks worked out that the next may take instead of doing again."""

    def __init__(self, thread: bool = True, fork: bool = True) -> None:
        self.thread = thread
        self._fork = thread and fork
        self.worker: SimilarWorker | None = None
        """The child that scores the ``similar`` passes, forked as the run is entered (where it
        may be) so that it loads its scorer while this process reads the stores; else
        the passes are scored on a thread (or, without ``thread``, on this one)."""
        self.bullets: dict[str, list[Bullet]] = {}
        """The bullets of each text checked so far (the project store's, for the global
        store's cross-scope check)."""
        self._plan: tuple[list[str], list[str], int, bool, RecallPlan] | None = None

    def recall_plan(
        self, project: list[str], global_: list[str], max_bytes: int, inject: bool
    ) -> RecallPlan:
        """:func:`~memory_ls.core.recall.recall_plan`, made once for both stores (each asks
        for the same plan)."""
        held = self._plan
        if held is not None and held[:4] == (project, global_, max_bytes, inject):
            return held[4]
        plan = recall_plan(project, global_, max_bytes, inject)
        self._plan = (project, global_, max_bytes, inject, plan)
        return plan

    def __enter__(self) -> _Run:
        """Fork the worker, if the run has one. Ctrl-C is held back until the worker is
        kept here, and one that comes as it is let through ends it again: an interrupted
        ``check`` never leaves its child running."""
        if self._fork:
            from memory_ls.core.similar import DEFAULT_THRESHOLD
            from memory_ls.store import similar_pass

            try:
                with similar_pass.interrupts_held():
                    self.worker = similar_pass.start_worker(DEFAULT_THRESHOLD)
            except BaseException:
                self.__exit__()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        """End the worker, if any (after the reports, or when they will not be asked for)."""
        if self.worker is not None:
            self.worker.close()


class _Hints:
    """One store's ``similar`` hints, being scored beside its other checks: in the run's
    worker or on a thread (:mod:`~memory_ls.store.similar_pass`). If the worker failed,
    the pass is scored here: the findings never depend on how it ran."""

    def __init__(
        self,
        notes: list[Bullet],
        pairs: Callable[[], list[tuple[int, int, float]] | None],
        stop: Callable[[], None],
    ) -> None:
        self._notes, self._pairs, self.stop = notes, pairs, stop

    def findings(self) -> list[Finding]:
        """The hints, once the pass is scored (this waits for it)."""
        from memory_ls.core.similar import (
            DEFAULT_THRESHOLD,
            compared_keys,
            key_pairs,
            pair_findings,
        )

        pairs = self._pairs()
        if pairs is None:
            pairs = key_pairs(compared_keys(self._notes), DEFAULT_THRESHOLD)
        return pair_findings(self._notes, pairs)


def _similar_beside(bullets: list[Bullet], run: _Run) -> _Hints:
    """A store's ``similar`` pass, started beside the rest of its checks: sent to the run's
    worker if it has one, else on a thread (or, without ``run.thread``, when asked)."""
    from memory_ls.core.similar import compared_keys, compared_notes

    notes = compared_notes(bullets)
    keys = compared_keys(notes)
    worker = run.worker
    if worker is not None and len(keys) >= 2:  # (one key: no pair, nothing to send)
        ticket = worker.submit(keys)
        if ticket is not None:
            return _Hints(notes, lambda: worker.pairs(ticket), lambda: None)
    from memory_ls.store.similar_pass import ThreadedPass

    threaded = ThreadedPass(keys, run.thread)
    return _Hints(notes, threaded.pairs, threaded.stop)


class _Started:
    """A file's findings, but for the ``similar`` hints still being scored."""

    def __init__(
        self,
        path: str,
        lines: list[str],
        found: list[Finding] | None = None,
        similar: _Hints | None = None,
        after: list[Finding] | None = None,
        error: str | None = None,
    ) -> None:
        self.path, self.lines, self.error = path, lines, error
        self.found, self.similar, self.after = found or [], similar, after or []

    def finish(self) -> FileReport:
        """The report, its findings in reading order (this waits for the hints)."""
        if self.error is not None:
            return FileReport(self.path, error=self.error)
        hints = self.similar.findings() if self.similar is not None else []
        return FileReport(self.path, self.lines, sort_findings([*self.found, *hints, *self.after]))

    def stop(self) -> None:
        """Stop the hints' thread: the report will not be asked for."""
        if self.similar is not None:
            self.similar.stop()


def _start_report(
    facts: FileFacts,
    runtime: MemoryRuntime | None,
    scope: Scope | None,
    real_store: str | None,
    run: _Run,
) -> _Started:
    """Every finding of a file but the ``similar`` hints, which a thread scores meanwhile
    (unless ``run.thread`` is false: then when they are asked for)."""
    path = facts.path
    if facts.outside_project is not None:
        # Reported, never read (SPEC §1).
        ctx = FileContext(scope="project", outside_project=facts.outside_project)
        return _Started(str(path), [""], check_bullets([""], [], ctx))
    if facts.symlink:
        ctx = FileContext(scope=scope, symlink=True)
        return _Started(str(path), [""], check_bullets([""], [], ctx))
    if facts.error is not None:
        return _Started(str(path), [], error=facts.error)
    text = decode_for_display(facts.data)
    lines = split_text(text).lines
    # Every bullet is read (the checks): the one-loop cold parse, not one cached call a line.
    parsed = ParsedFile(lines, [b for b in parse_bullets(lines) if b is not None], None, None)
    run.bullets[text] = parsed.bullets
    # The runtime reads this store too (the other store's cross-scope checks and recall):
    # the same text is this parse, not parsed again (~7 ms on 4,500 notes).
    remember(text, parsed)
    # First, so that it runs beside everything else.
    similar = _similar_beside(parsed.bullets, run)
    try:
        found, after = _other_findings(runtime, scope, real_store, parsed, run, facts)
    except BaseException:
        similar.stop()
        raise
    return _Started(str(path), lines, found, similar, after)


def _other_findings(
    runtime: MemoryRuntime | None,
    scope: Scope | None,
    real_store: str | None,
    parsed: ParsedFile,
    run: _Run,
    facts: FileFacts,
) -> tuple[list[Finding], list[Finding]]:
    """The findings of the checks on the file alone, and of SPEC §13's checks."""
    lines = parsed.lines
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
            # The other store's text was checked just before (the project store, when
            # this is the global one): its bullets are not parsed again.
            known = run.bullets.get(other_view.file.content)
            theirs_bullets = known if known is not None else other_view.parsed.bullets
            if len(parsed.bullets) < len(theirs_bullets):
                # Only this store's keys are looked up in it (cross_scope_findings): the
                # global store's ~15 keys need no index of the project store's 4,500.
                wanted = {b.key for b in parsed.bullets if b.note}
                theirs_bullets = [b for b in theirs_bullets if b.key in wanted]
            other_keys = key_index(theirs_bullets)
        mine = parsed.notes if (scope == "global" or trust.trusted) else []
        theirs = runtime.recall_notes(other)
        project, global_ = (mine, theirs) if scope == "project" else (theirs, mine)
        plan = run.recall_plan(project, global_, config.max_inject_bytes, config.inject)
    ctx = FileContext(**ctx_args)  # type: ignore[arg-type]
    findings = check_bullets(
        lines, parsed.bullets, ctx, plan=plan, other_keys=other_keys, other_path=other_path
    )
    after: list[Finding] = []
    if runtime is not None and scope is not None and real_store is None:
        # SPEC §13: stale mentions, instruction-file repeats and conflicting notes.
        from memory_ls.store.project_files import stale_and_conflict_findings

        other_parsed = runtime.view("global").parsed if scope == "project" else None
        after = stale_and_conflict_findings(
            runtime.project_root,
            runtime.agent_dir,
            scope,
            parsed,
            other_parsed,
            str(runtime.paths["global"]),
        )
    return findings, after


def lint_path(
    path: Path,
    agent_dir: str | None,
    trusted: bool | None,
    project: Path | None = None,
    run: _Run | None = None,
) -> FileReport:
    """Check a file in the context its path implies (the store layer classifies it).

    The global store is checked against ``project``'s store (default: the
    current directory's), for cross-scope duplicates and the recall budget. When it is
    also a project's store file (the agent dir is that ``.pi``), that project is the
    default, and the file gets that project scope's refusal, as ``check`` reports it.
    """
    global_store = global_store_path(agent_dir_for(agent_dir))
    found = classify_store_path(as_written(path), global_store)
    return _lint_found(path, found, agent_dir, trusted, project, run)


def _lint_found(
    path: Path,
    found: StorePath | None,
    agent_dir: str | None,
    trusted: bool | None,
    project: Path | None,
    run: _Run | None,
) -> FileReport:
    """:func:`lint_path` of ``path``, classified as ``found`` (reported as given)."""
    if found is None:
        return lint_file(path, None, None, run=run)
    if found.scope == "global":
        # The project its path names (its agent dir is that `.pi`), else the current one.
        where = project or found.root or Path.cwd()
        runtime = MemoryRuntime(where, agent_dir=agent_dir, trusted=trusted)
        report = lint_file(path, runtime, "global", run=run)
        # Also that project's store: its refusal, as `check` without FILE and the editor say.
        refusal = found.refusal or runtime.shared_store_refusal("global")
        return report if refusal is None else _with_refusal(report, refusal, report.path)
    assert found.root is not None  # a `.pi/memory.md` always names its project
    runtime = MemoryRuntime(found.root, agent_dir=agent_dir, trusted=trusted)
    return lint_file(path, runtime, "project", found.real_store, run)


def file_identity(path: Path, found: StorePath | None) -> tuple[object, ...]:
    """What makes two of ``check``'s arguments one check: the same context (``found``,
    the store the path is, of which project) and the same file. The file is its device
    and inode, the last component not followed (a symlink is a file of its own, refused
    as one); a file that cannot be looked at is its canonical path. A project store
    refused as a whole is never looked at: its context says all."""
    if found is not None and found.scope == "project" and found.refusal is not None:
        return (found,)
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return (found, canonical_path(path))
    return (found, info.st_dev, info.st_ino)


def _with_refusal(report: FileReport, refusal: str, path: str) -> FileReport:
    """The global store's ``report``, under ``path``, with the refusal of the project scope
    whose store file it also is (the agent dir is that project's ``.pi``)."""
    from memory_ls.core.checks import file_findings

    refused = file_findings(report.lines, FileContext(outside_project=refusal))
    return FileReport(path, report.lines, sort_findings([*refused, *report.findings]), report.error)


def lint_paths(
    paths: Sequence[Path], agent_dir: str | None, trusted: bool | None, project: Path | None = None
) -> list[FileReport]:
    """:func:`lint_path` of each of ``paths`` (``check FILE...``), in turn, with one worker
    for all their ``similar`` passes: a worker each would wait for each child to load its
    scorer. A file named twice (two spellings of one path, a folder link, a hard link in
    the same context: :func:`file_identity`) is checked once, where it is first named."""
    global_store = global_store_path(agent_dir_for(agent_dir))
    seen: set[tuple[object, ...]] = set()
    reports = []
    with _Run() as run:
        for path in paths:
            written = as_written(path)
            found = classify_store_path(written, global_store)
            identity = file_identity(written, found)
            if identity in seen:
                continue  # one file named twice is checked once, where first named
            seen.add(identity)
            reports.append(_lint_found(path, found, agent_dir, trusted, project, run))
    return reports


def lint_stores(
    runtime: MemoryRuntime, *, thread: bool = True, fork: bool = True
) -> list[FileReport]:
    """Check both stores of a project (a missing store has nothing to find; one that
    cannot be reached, :func:`~memory_ls.store.files.unreachable_store`, is reported).

    Each store's ``similar`` pass is scored beside the rest of both stores' checks: in a
    forked child (``fork``, where one may be forked: :mod:`~memory_ls.store.similar_pass`),
    else on a second thread; ``thread=False`` scores it on this one (the same reports).
    """
    started: list[_Started] = []
    # The agent dir is the project's `.pi` (or a link either way, or a bind mount): both
    # stores are one file, checked once, as the global store with the project scope's
    # refusal. (A `.pi` that leads out, even to the agent dir, is another matter: that
    # project store is a link, never read, reported as refused beside the global store.)
    shared = runtime.shared_store_refusal("global")
    with _Run(thread, fork) as run:
        try:
            for scope in ("project", "global"):
                root = runtime.project_root if scope == "project" else None
                facts = memory_file_facts(
                    runtime.paths[scope], LINT_READ_LIMIT, root, runtime.paths["global"]
                )
                if facts.exists or facts.outside_project is not None:
                    started.append(_start_report(facts, runtime, scope, None, run))
                elif (why := unreachable_store(facts.path)) is not None:
                    # Not missing: it cannot be reached (an agent dir or `.pi` that loops,
                    # is a file, or links to nothing). Reported, so `check` fails.
                    started.append(_Started(str(facts.path), [], error=why))
            reports = [s.finish() for s in started]
        finally:
            for s in started:
                s.stop()
    if shared is not None and len(reports) == 2:
        # Under the project store's path, which the refusal is about.
        return [_with_refusal(reports[1], shared, reports[0].path)]
    return reports


UNREADABLE = "unreadable"
"""The code of ``check``'s JSON and SARIF row for a file it could not check at all (not a
diagnostic: the editor has no such file open). Its message is the reason, in the words
the other verbs use (:func:`~memory_ls.store.files.read_failed_message`)."""


def _unreadable_row(path: str, error: str) -> dict[str, object]:
    return {
        "path": path,
        "line": 1,
        "column": 1,
        "endLine": 1,
        "endColumn": 1,
        "code": UNREADABLE,
        "severity": "error",
        "message": error,
    }


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
    failing = any(f.severity in ("error", "warning") for r in reports for f in r.findings)
    if fmt not in ("json", "sarif"):
        # Text: a line a finding, written from the findings (no row dicts), each report's
        # path escaped once (``check`` on 4,500 notes writes ~1,400 lines).
        out: list[str] = []
        for r in reports:
            shown = display_path(r.path)
            out.extend(
                f"{shown}:{f.line + 1}:{f.start + 1}: {f.code} {f.message}" for f in r.findings
            )
        return "\n".join(out), failing
    import json

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
    # A file that could not be checked at all is in the document too (text says it on
    # standard error): a CI step that reads only the JSON sees why `check` failed.
    rows += [_unreadable_row(r.path, r.error) for r in reports if r.error is not None]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False), failing
    # sarif
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
                            for code, s in {**CODES, UNREADABLE: "error"}.items()
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
