"""Findings of an open document, as LSP diagnostics (SPEC §7 Diagnostics).

The core decides what is wrong (:mod:`memory_ls.core.checks`); this module asks
it only about what an edit can have changed, and turns findings into plain
JSON-ready dicts in the negotiated position encoding (building lsprotocol
objects for every diagnostic costs more than the analysis itself).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from memory_ls.core.checks import (
    CODES,
    FileContext,
    Finding,
    cross_scope_findings,
    duplicate_findings,
    file_findings,
    not_injected_findings,
    sort_findings,
    wire_data,
)
from memory_ls.core.similar import pair_finding, similar_pairs, similar_to
from memory_ls.core.text import MAX_STORE_BYTES
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.positions import to_client
from memory_ls.server.uris import uri_of_path
from memory_ls.server.workspace import DocumentInfo, Projects
from memory_ls.store.facts import memory_file_facts

SOURCE = "memory"
SIMILAR_LIMIT = 2000
"""At most this many ``similar`` pairs per document: hints, not a flood."""
SEVERITY_NUMBER = {"error": 1, "warning": 2, "information": 3, "hint": 4}

Json = dict[str, Any]

DISK_READ_LIMIT = 4 * MAX_STORE_BYTES
"""The most of an open document's file read for its disk facts."""


@dataclasses.dataclass(slots=True)
class DiskFacts:
    """What the file on disk says about an open document (read on open, save and watch)."""

    symlink: bool = False
    invalid_utf8_at: tuple[int, int, int] | None = None


def disk_facts(doc: MemoryDocument) -> DiskFacts:
    """Whether the document's file is a symlink or holds invalid UTF-8 (never raises or blocks).

    The store layer decides both (:func:`memory_file_facts`), for ``check`` too, so
    the two report the same column; a FIFO or device is never opened for reading,
    nor a project store whose ``.pi`` leads out of the project.
    """
    facts = memory_file_facts(doc.path, DISK_READ_LIMIT)
    return DiskFacts(symlink=facts.symlink, invalid_utf8_at=facts.invalid_utf8_at)


@dataclasses.dataclass(slots=True)
class DocState:
    """Per-document diagnostics state: disk facts, caches and what was last sent."""

    info: DocumentInfo
    disk: DiskFacts = dataclasses.field(default_factory=DiskFacts)
    similar: dict[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    similar_ready: bool = False
    not_injected: tuple[object, list[Finding]] | None = None
    sent: list[Json] | None = None
    """The diagnostics last pushed or pulled."""
    built: dict[tuple[object, ...], Json] = dataclasses.field(default_factory=dict)
    """LSP form of the last findings, by value: most survive a keystroke unchanged."""
    result_id: int = 0
    behind: list[str] = dataclasses.field(default_factory=list)
    """``buffer-behind-file`` messages: changes commands wrote that the buffer lacks."""


class Analysis:
    """Computes each open document's findings and their LSP form."""

    def __init__(self, projects: Projects) -> None:
        self.projects = projects
        self.states: dict[str, DocState] = {}
        self.encoding = "utf-16"
        self.related = True

    # -- findings ------------------------------------------------------------------

    def findings(self, doc: MemoryDocument) -> list[Finding]:
        """Every finding of ``doc`` as it is now (cached parts reused)."""
        state = self.states[doc.uri]
        info = state.info
        runtime = info.runtime
        scope = info.scope
        trust, config = runtime.trust(), runtime.config()
        # The store layer's one decision; a refused store is neither compared nor recalled.
        outside = runtime.store_refusal(scope) if scope is not None else None
        ctx = FileContext(
            scope=scope,
            size=doc.size,
            symlink=state.disk.symlink,
            invalid_utf8_at=state.disk.invalid_utf8_at,
            inject=config.inject,
            trusted=trust.trusted,
            trust_reason=trust.summary,
            real_store=info.real_store,
            outside_project=outside,
        )
        out = file_findings(doc.lines, ctx)
        out.extend(
            Finding("buffer-behind-file", 0, 0, 0, len(doc.lines[0]), message)
            for message in state.behind
        )
        for found in doc.found.values():
            out.extend(found)
        if doc.dup_keys:
            out.extend(duplicate_findings(doc.bullets_for(doc.dup_keys)))
        if scope is not None and outside is None:
            other = self.projects.other_keys(runtime, scope)
            common = doc.key_lines.keys() & other.keys()
            if common:
                other_path = str(runtime.paths["global" if scope == "project" else "project"])
                out.extend(cross_scope_findings(doc.bullets_for(common), scope, other, other_path))
            # The plan holds no note of an untrusted project: nothing to flag there.
            out.extend(self._not_injected(doc, state))
        if state.similar and self._enabled("similar"):
            out.extend(self._similar(doc, state))
        return sort_findings(out)

    def _not_injected(self, doc: MemoryDocument, state: DocState) -> list[Finding]:
        scope = state.info.scope
        assert scope is not None
        plan, decisions = self.projects.plan(state.info.runtime)
        key = (decisions, doc.layout, plan.used)
        if state.not_injected is not None and state.not_injected[0] == key:
            return [self._rerange(doc, f) for f in state.not_injected[1]]
        found = not_injected_findings(doc.note_bullets(), scope, plan)
        state.not_injected = (key, found)
        return found

    @staticmethod
    def _rerange(doc: MemoryDocument, f: Finding) -> Finding:
        first, last = doc.bullet_at(f.line), doc.bullet_at(f.end_line)
        if first is None or last is None or (first.start, last.end) == (f.start, f.end):
            return f
        return dataclasses.replace(f, start=first.start, end=last.end)

    def _similar(self, doc: MemoryDocument, state: DocState) -> list[Finding]:
        out = []
        for (a, b), score in state.similar.items():
            first, later = doc.first_of(a), doc.first_of(b)
            if first is None or later is None:
                continue
            if later.line < first.line:
                first, later = later, first
            out.append(pair_finding(first, later, score))
        return out

    # -- similar hints (off the edit path) -----------------------------------------

    def similar_snapshot(self, doc: MemoryDocument) -> list[str]:
        """The distinct keys in file order, for a full ``similar`` pass; resets touched keys."""
        doc.touched_keys = set()
        firsts = sorted(lines[0] for lines in doc.key_lines.values())
        return [b.key for i in firsts if (b := doc.bullets[i]) is not None]

    def similar_threshold(self) -> float:
        """The configured score threshold."""
        return self.projects.settings.similar_threshold

    @staticmethod
    def all_pairs(keys: list[str], threshold: float) -> dict[tuple[str, str], float]:
        """Every close pair among ``keys`` (run in a worker thread)."""
        pairs = similar_pairs(keys, threshold, limit=SIMILAR_LIMIT)
        return _dedupe_pairs({(keys[i], keys[j]): score for i, j, score in pairs})

    def similar_incremental(self, doc: MemoryDocument) -> None:
        """Compare only the notes edited since the last pass against the rest."""
        state = self.states.get(doc.uri)
        if state is None or not state.similar_ready:
            return
        touched = [k for k in doc.touched_keys if k in doc.key_lines]
        doc.touched_keys = set()
        pairs = {
            p: s
            for p, s in state.similar.items()
            if p[0] in doc.key_lines and p[1] in doc.key_lines
        }
        if touched and len(doc.key_lines) > 1 and doc.size <= MAX_STORE_BYTES:
            keys = list(doc.key_lines)
            threshold = self.similar_threshold()
            for key in touched:
                for idx, score in similar_to(key, keys, threshold):
                    if len(pairs) >= SIMILAR_LIMIT:
                        break
                    pairs[(key, keys[idx])] = score
        state.similar = _dedupe_pairs(pairs)

    def _enabled(self, code: str) -> bool:
        return self.projects.settings.severity.get(code) != "off"

    # -- LSP form ------------------------------------------------------------------

    def items(self, doc: MemoryDocument) -> list[Json]:
        """The document's diagnostics as LSP JSON."""
        overrides: Mapping[str, str] = self.projects.settings.severity
        state = self.states.get(doc.uri)
        previous = state.built if state is not None else {}
        built: dict[tuple[object, ...], Json] = {}
        out: list[Json] = []
        lines = doc.lines
        for f in self.findings(doc):
            level = overrides.get(f.code) or CODES[f.code]
            if level == "off":
                continue
            severity = SEVERITY_NUMBER[level]
            key = _value_key(f, severity, lines)
            item = previous.get(key) if key is not None else None
            if item is None:
                item = self.diagnostic(doc, f, severity)
            if key is not None:
                built[key] = item
            out.append(item)
        if state is not None:
            state.built = built
        return out

    def diagnostic(self, doc: MemoryDocument, f: Finding, severity: int) -> Json:
        """One finding as an LSP ``Diagnostic``."""
        item: Json = {
            "range": self.range(doc, f.line, f.start, f.end_line, f.end),
            "severity": severity,
            "code": f.code,
            "source": SOURCE,
            "message": f.message,
            "data": wire_data(f),
        }
        if f.related and self.related:
            item["relatedInformation"] = [
                {
                    "location": {
                        "uri": doc.uri if r.path is None else _uri(r.path),
                        # Columns in another file are not known in client units: line only.
                        "range": self.range(doc, r.line, r.start, r.line, r.end)
                        if r.path is None
                        else _line_range(r.line),
                    },
                    "message": r.message,
                }
                for r in f.related
            ]
        return item

    def range(self, doc: MemoryDocument, line: int, start: int, end_line: int, end: int) -> Json:
        """A ``str``-index range on ``doc`` as an LSP range."""
        lines = doc.lines
        first = lines[line] if 0 <= line < len(lines) else ""
        last = lines[end_line] if 0 <= end_line < len(lines) else ""
        enc = self.encoding
        return {
            "start": {"line": line, "character": to_client(first, start, enc)},
            "end": {"line": end_line, "character": to_client(last, end, enc)},
        }


def _uri(path: str) -> str:
    return uri_of_path(path)


def _line_range(line: int) -> Json:
    return {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}


def _dedupe_pairs(pairs: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for (a, b), score in pairs.items():
        if a != b:
            out[(a, b) if a < b else (b, a)] = score
    return out


def _value_key(f: Finding, severity: int, lines: list[str]) -> tuple[object, ...] | None:
    """Everything a finding's LSP form depends on, or ``None`` when it cannot be keyed.

    The texts of the lines its ranges touch are part of the key, since a column's
    UTF-16 (or UTF-8) value depends on the characters before it.
    """

    def text(line: int) -> str | None:
        return lines[line] if 0 <= line < len(lines) else None

    try:
        return (
            f.code,
            f.line,
            f.start,
            f.end_line,
            f.end,
            f.message,
            severity,
            text(f.line),
            text(f.end_line),
            tuple(sorted(f.data.items())),
            tuple((r.line, r.start, r.end, r.message, r.path, text(r.line)) for r in f.related),
            hash(tuple(f.data.values())),
        )
    except TypeError:  # an unhashable value in data
        return None
