"""Findings of an open document, as LSP diagnostics (SPEC §7 Diagnostics).

The core decides what is wrong (:mod:`memory_ls.core.checks`); this module asks
it only about what an edit can have changed, and turns findings into plain
JSON-ready dicts in the negotiated position encoding (building lsprotocol
objects for every diagnostic costs more than the analysis itself).
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import json
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any, NamedTuple

from memory_ls.core import records
from memory_ls.core.checks import (
    FileContext,
    Finding,
    cross_scope_findings,
    duplicate_findings,
    file_findings,
    lean_wire_data,
    not_injected_findings,
    note_hash,
    sort_findings,
    wire_data,
)
from memory_ls.core.conflicts import (
    MAX_CONFLICTS_PER_NOTE,
    Claim,
    claims_of_key,
    conflict_finding,
    conflict_subject,
)
from memory_ls.core.models import Scope
from memory_ls.core.notes import Bullet
from memory_ls.core.similar import SIMILAR_LIMIT, pair_finding, similar_pairs, similar_to
from memory_ls.core.text import MAX_STORE_BYTES
from memory_ls.server import review
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.positions import to_client
from memory_ls.server.project_watch import STALE_CODES, ProjectFiles
from memory_ls.server.publishing import DISK_LOOK_REUSE
from memory_ls.server.uris import uri_of_path
from memory_ls.server.workspace import ClaimingNotes, DocumentInfo, Projects
from memory_ls.store.facts import memory_file_facts

SOURCE = "memory"
CONFLICT_LIMIT = 2000
"""At most this many ``conflict`` diagnostics per document: a store of copies of "use X;
never use X" would otherwise make every copy conflict with every other (millions)."""
CONFLICT_PER_NOTE = MAX_CONFLICTS_PER_NOTE
"""At most this many ``conflict`` diagnostics on one note (each names one other note), as
``check`` (:data:`memory_ls.core.conflicts.MAX_CONFLICTS_PER_NOTE`): the index bounds the
other notes a note is paired with, this bounds the copies of them."""
SEVERITY_NUMBER = {"error": 1, "warning": 2, "information": 3, "hint": 4}

Json = dict[str, Any]

DISK_READ_LIMIT = 4 * MAX_STORE_BYTES
"""The most of an open document's file read for its disk facts."""


@dataclasses.dataclass(slots=True)
class DiskFacts:
    """What the file on disk says about an open document (read on open, save and watch)."""

    symlink: bool = False
    invalid_utf8_at: tuple[int, int, int] | None = None


def disk_facts(doc: MemoryDocument, info: DocumentInfo | None = None) -> DiskFacts:
    """Whether the document's file is a symlink or holds invalid UTF-8 (never raises or blocks).

    The store layer decides both (:func:`memory_file_facts`), for ``check`` too, so
    the two report the same column; a FIFO or device is never opened for reading,
    nor a project store whose ``.pi`` leads out of the project.
    """
    # The global store as the agent dir names it is looked into even where that path runs
    # through a refused `.pi` (`<root>/.pi/x/.pi`): it is the global store, not refused.
    named = info.runtime.paths["global"] if info is not None and info.scope == "global" else None
    facts = memory_file_facts(doc.path, DISK_READ_LIMIT, None, named)
    return DiskFacts(symlink=facts.symlink, invalid_utf8_at=facts.invalid_utf8_at)


Pair = tuple[str, str]
"""A ``similar`` pair: two keys, the smaller first."""

ConflictRef = str | tuple[str, str]
"""A note in a document's conflict index: its key, or ``("global", key)`` for a note of
the global store (compared with a project document)."""
_Candidate = tuple[tuple[int, int], Bullet, Scope, str | None, str, ConflictRef]
"""A note another may be in conflict with: its reading position, the note, its scope,
its file (``None``: the same document), the subject, and its ref."""


_LINE = -918273645
_END = -918273646
_REF = -918273647
_LINE_HOLE = b'"line": %d' % _LINE
"""Where a diagnostic's own line goes in its encoded template: ``"line": `` with its
quotes unescaped never occurs inside an encoded string, so the hole is unambiguous."""
_END_HOLE = b'"line": %d' % _END
"""Where its range's end line goes."""
_REF_HOLE = b'"line": %d' % _REF
"""Where the line of the earlier note a ``duplicate`` or ``similar`` points at goes."""
_FIRST_HOLE = b'"firstLine": %d' % _REF
_MESSAGE_HOLE = json.dumps("on line \x00").encode()[1:-1]
"""The same line, 1-based, in the message (a NUL never survives into a template's
message: a message holding one gets no hole)."""
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # (not in the stubs)
_ENCODE = (
    None
    if _C_ENCODER is None
    else _C_ENCODER(
        None,  # no circular check: a diagnostic is a tree
        None,  # nothing but JSON types: no default
        json.encoder.encode_basestring_ascii,
        None,
        ": ",
        ", ",
        False,
        False,
        True,
    )
)
"""``json.dumps``'s own C encoder, made once: the same bytes without building an encoder
per diagnostic (the first publish of a store encodes each of its diagnostics)."""


def _encode(item: object) -> str:
    """``json.dumps(item)`` (ASCII, the default separators)."""
    if _ENCODE is None:  # a Python without the C accelerator
        return json.dumps(item)
    return "".join(_ENCODE(item, 0))


_string: Callable[[str], str] = json.encoder.encode_basestring_ascii
"""A JSON string as ``json.dumps`` writes it (its C function, where there is one)."""


_REF_CODES = frozenset({"duplicate", "similar"})
"""Codes whose message names the earlier note's line ("… on line N: …", before any
note text) and whose data's ``firstLine`` and one related location hold it."""

_FINDING_REST = attrgetter("code", "start", "end", "message", "data", "related")
"""A finding's fields but its own two line numbers."""


def _ref_of(f: Finding) -> int | None:
    """The earlier note's line a finding's template holds as a hole, if any."""
    if f.code not in _REF_CODES or len(f.related) != 1 or f.related[0].path is not None:
        return None
    ref = f.related[0].line
    if (
        f.data.get("firstLine") != ref
        or "\x00" in f.message
        or f"on line {ref + 1}" not in f.message
    ):
        return None
    return ref


def _shape(f: Finding, ref: int | None) -> tuple[object, ...]:
    """What a finding's template depends on beyond the line numbers it has holes for."""
    if ref is None:
        return _FINDING_REST(f)
    r = f.related[0]
    return (
        f.code,
        f.start,
        f.end,
        f.message.replace(f"on line {ref + 1}", "on line \x00", 1),
        {**f.data, "firstLine": None},
        (r.start, r.end, r.message),
    )


class Encoded(NamedTuple):
    """One finding as encoded on its line, kept so that a line that only moved is not
    encoded again: its bytes are the template with the new line numbers spliced in."""

    shape: tuple[object, ...]
    """:func:`_shape` of the finding."""
    level: str
    texts: tuple[str, ...]
    """The text of every line whose columns it holds (client units depend on them)."""
    template: bytes


_ClaimKey = tuple[str, bool, frozenset[str]]


def self_conflict(claims: tuple[Claim, ...]) -> bool:
    """Whether a note's claims contradict each other ("use X; never use X")."""
    return conflict_subject(claims, claims) is not None


class ConflictOrder:
    """A document's notes that make claims (its keys, and for a project store the global
    store's as ``("global", key)``), each claim's notes kept in reading order.

    Reading order is this store's notes by their first line, then the global store's: a
    line added or removed moves every later note alike, so the order holds; a note that
    came, went or changed is taken out and put back where it now reads (``position``).
    The first few notes of the claims opposite to a note's are then the first few it
    conflicts with, found without looking at the others (:meth:`first`): a store of
    thousands of notes making one claim and thousands the opposite is not quadratic.
    """

    __slots__ = ("_claims", "_groups", "_members")

    def __init__(self) -> None:
        self._claims: dict[ConflictRef, tuple[Claim, ...]] = {}
        self._groups: dict[_ClaimKey, list[ConflictRef]] = {}
        """Each claim's notes, in reading order."""
        self._members: dict[_ClaimKey, set[ConflictRef]] = {}

    def __contains__(self, ref: object) -> bool:
        return ref in self._claims

    def append(self, ref: ConflictRef, claims: tuple[Claim, ...]) -> None:
        """Index a note that reads after every indexed one."""
        if not claims:
            return
        self._claims[ref] = claims
        for c in claims:
            claim = (c.subject, c.positive, c.context)
            self._groups.setdefault(claim, []).append(ref)
            self._members.setdefault(claim, set()).add(ref)

    def add(
        self,
        ref: ConflictRef,
        claims: tuple[Claim, ...],
        position: Callable[[ConflictRef], tuple[int, int]],
    ) -> None:
        """Index a note where it reads (``position`` of any indexed note, live)."""
        if not claims:
            return
        self._claims[ref] = claims
        for c in claims:
            claim = (c.subject, c.positive, c.context)
            bisect.insort(self._groups.setdefault(claim, []), ref, key=position)
            self._members.setdefault(claim, set()).add(ref)

    def remove(self, ref: ConflictRef) -> None:
        """Forget a note."""
        for c in self._claims.pop(ref, ()):
            claim = (c.subject, c.positive, c.context)
            members = self._members[claim]
            members.discard(ref)
            if members:
                self._groups[claim].remove(ref)
            else:
                del self._members[claim], self._groups[claim]

    def near(self, ref: ConflictRef, count: int) -> bool:
        """Whether ``ref`` is among the first ``count`` notes of one of its claims."""
        return any(
            ref in self._groups[(c.subject, c.positive, c.context)][:count]
            for c in self._claims.get(ref, ())
        )

    def partners(self, ref: ConflictRef) -> set[ConflictRef]:
        """Every note ``ref`` conflicts with."""
        out: set[ConflictRef] = set()
        for c in self._claims.get(ref, ()):
            out.update(self._members.get((c.subject, not c.positive, c.context), ()))
        out.discard(ref)
        return out

    def first(self, ref: ConflictRef, count: int) -> list[tuple[ConflictRef, str]]:
        """The first ``count`` other notes of each claim opposite to ``ref``'s (in reading
        order, so the first ``count`` it conflicts with are among them), each with the
        subject of the first of ``ref``'s claims it contradicts
        (:meth:`memory_ls.core.conflicts.ConflictIndex.conflicts_of` picks the same)."""
        claims = self._claims.get(ref, ())
        opposite = [(c.subject, not c.positive, c.context) for c in claims]
        out: dict[ConflictRef, str] = {}
        for claim in opposite:
            taken = 0
            for other in self._groups.get(claim, ()):
                if taken == count:
                    break
                if other == ref:
                    continue
                taken += 1
                if other not in out:
                    for c, against in zip(claims, opposite, strict=True):
                        if other in self._members.get(against, ()):
                            out[other] = c.subject.removeprefix("use ")
                            break
        return list(out.items())


@dataclasses.dataclass(slots=True)
class Published:
    """A document's diagnostics kept per line, each line's already JSON-encoded.

    Each source of findings keeps what it found by key or line, so a change
    recomputes only the keys and lines it touched; a line whose findings changed
    is encoded again, and a publish joins the encoded lines (:meth:`Analysis.encoded`).
    """

    context: object = None
    """What everything here depends on beyond the text (a change rebuilds it all)."""
    buckets: dict[int, bytes] = dataclasses.field(default_factory=dict)
    """Line -> its diagnostics' JSON, comma-separated, in order."""
    lines: list[int] = dataclasses.field(default_factory=list)
    """The lines that have diagnostics, in order."""
    joined: bytes | None = None
    """Every bucket joined, until one changes."""
    encoded: dict[int, list[Encoded]] = dataclasses.field(default_factory=dict)
    """Line -> how each of its diagnostics was encoded (as in :attr:`buckets`), for the
    lines encoded from templates: those that moved (:meth:`Analysis._bucket`)."""
    moved: dict[int, list[Encoded]] = dataclasses.field(default_factory=dict)
    """The :attr:`encoded` of the lines that moved, by their line before the move; used
    (then cleared) by the update that follows the move."""
    file: list[Finding] = dataclasses.field(default_factory=list)
    file_at: dict[int, list[Finding]] = dataclasses.field(default_factory=dict)
    dup: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)
    dup_at: dict[int, Finding] = dataclasses.field(default_factory=dict)
    cross: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)
    cross_at: dict[int, Finding] = dataclasses.field(default_factory=dict)
    cross_source: object = None
    """The other store's key index the cross-scope findings were made from."""
    ni_key: object = None
    ni_at: dict[int, Finding] = dataclasses.field(default_factory=dict)
    """``not-injected`` findings by their first line."""
    ni_ends: dict[int, int] = dataclasses.field(default_factory=dict)
    """Last line of a ``not-injected`` run -> its first line."""
    sim: dict[Pair, Finding] = dataclasses.field(default_factory=dict)
    sim_at: dict[int, dict[Pair, Finding]] = dataclasses.field(default_factory=dict)
    sim_version: int = -1
    # SPEC §13 stale-path, stale-script, instruction-duplicate (`_stale`).
    st_source: object = None
    """The judge (project_watch.py) the notes were judged by."""
    st: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)
    """Key -> the findings on its notes."""
    st_at: dict[int, list[Finding]] = dataclasses.field(default_factory=dict)
    # -- conflict (SPEC §13), kept apart: the index and the findings of each pair ---------
    conf_index: ConflictOrder | None = None
    """The document's notes (and, for a project store, the global store's) by claim, in
    reading order."""
    conf_source: ClaimingNotes | None = None
    """The global store's claiming notes the index holds."""
    conf_seen: object = None
    """The :attr:`cross_source` seen when :attr:`conf_source` was last asked for."""
    conf: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)
    """Key -> the findings on its notes (each names another note)."""
    conf_at: dict[int, list[Finding]] = dataclasses.field(default_factory=dict)
    conf_count: int = 0
    """How many findings :attr:`conf` holds (at most :data:`CONFLICT_LIMIT`)."""


@dataclasses.dataclass(slots=True)
class DocState:
    """Per-document diagnostics state: disk facts, caches and what was last sent."""

    info: DocumentInfo
    disk: DiskFacts = dataclasses.field(default_factory=DiskFacts)
    similar: dict[Pair, float] = dataclasses.field(default_factory=dict)
    """Every ``similar`` pair of the document's keys and its score."""
    similar_by_key: dict[str, set[Pair]] = dataclasses.field(default_factory=dict)
    similar_ready: bool = False
    similar_version: int = 0
    """Bumped when :attr:`similar` is replaced as a whole."""
    similar_changed: set[Pair] = dataclasses.field(default_factory=set)
    """Pairs added or dropped since the diagnostics last looked."""
    published: Published = dataclasses.field(default_factory=Published)
    sent: bytes | None = None
    """The diagnostics last pushed or pulled, as encoded."""
    result_id: int = 0
    behind: list[str] = dataclasses.field(default_factory=list)
    """``buffer-behind-file`` messages: changes commands wrote that the buffer lacks."""
    conflicts_ready: bool = True
    """False while a large store's claims are first read in a thread (no ``conflict``
    findings until then; :func:`memory_ls.server.background.prepare_conflicts`)."""

    def set_similar(self, pairs: dict[Pair, float]) -> None:
        """Replace every ``similar`` pair (after a full pass)."""
        self.similar = {}
        self.similar_by_key = {}
        for pair, score in pairs.items():
            self._add_pair(pair, score)
        self.similar_version += 1
        self.similar_changed = set()

    def _add_pair(self, pair: Pair, score: float) -> None:
        self.similar[pair] = score
        for key in pair:
            self.similar_by_key.setdefault(key, set()).add(pair)

    def _drop_pair(self, pair: Pair) -> None:
        if self.similar.pop(pair, None) is None:
            return
        for key in pair:
            pairs = self.similar_by_key.get(key)
            if pairs is not None:
                pairs.discard(pair)
                if not pairs:
                    del self.similar_by_key[key]


class Analysis:
    """Computes each open document's findings and their LSP form."""

    def __init__(self, projects: Projects) -> None:
        self.projects = projects
        self.states: dict[str, DocState] = {}
        self.encoding = "utf-16"
        self.related = True
        self.reuse_look = DISK_LOOK_REUSE
        """Seconds a pass may take the last pass's look at the disk (``MemoryRuntime.steady``):
        none for a pull client that cannot be asked to pull again (``publishing.negotiate``)."""
        self.files = ProjectFiles()
        """What each project's files hold, for SPEC §13's checks (``project_watch.py``)."""

    # -- publishing ----------------------------------------------------------------

    def encoded(self, doc: MemoryDocument) -> bytes:
        """The document's diagnostics as the JSON inside a ``diagnostics`` array.

        Only what an edit touched is recomputed and re-encoded; the rest is the
        bytes built for an earlier publish.
        """
        state = self.states[doc.uri]
        pub = self._update(doc, state, state.published)
        if pub.joined is None:
            pub.joined = b", ".join(map(pub.buckets.__getitem__, pub.lines))
        return pub.joined

    def findings(self, doc: MemoryDocument) -> list[Finding]:
        """Every finding of ``doc`` as it is now, in reading order (severity ``off`` too)."""
        state = self.states[doc.uri]
        pub = self._update(doc, state, state.published)
        found: list[Finding] = [*pub.file]
        for line_found in doc.found.values():
            found.extend(line_found)
        for by_line in (pub.dup_at, pub.cross_at, pub.ni_at):
            found.extend(by_line.values())
        found.extend(pub.sim.values())
        for st_found in pub.st_at.values():
            found.extend(st_found)
        for on_line in pub.conf_at.values():
            found.extend(on_line)
        return sort_findings(found)

    def items(self, doc: MemoryDocument) -> list[Json]:
        """The document's diagnostics as LSP JSON (decoded from :meth:`encoded`)."""
        return list(json.loads(b"[" + self.encoded(doc) + b"]"))

    # -- keeping the findings up to date -------------------------------------------

    def _context(self, doc: MemoryDocument, state: DocState) -> tuple[object, ...]:
        info = state.info
        scope = info.scope
        outside = info.runtime.store_refusal(scope) if scope is not None else None
        settings = self.projects.settings
        # The objects themselves, not their ids: an id can be reused once one is freed.
        return (doc.epoch, info, scope, outside, settings, self.encoding, self.related)

    def _update(self, doc: MemoryDocument, state: DocState, pub: Published) -> Published:
        """Bring ``pub`` up to the document's text and everything it depends on (or
        replace it, when what it was built on changed), looking at the disk once."""
        with state.info.runtime.steady(reuse_for=self.reuse_look):
            return self._update_steady(doc, state, pub)

    def _update_steady(self, doc: MemoryDocument, state: DocState, pub: Published) -> Published:
        context = self._context(doc, state)
        dirty: set[int] = set()
        shift = 0
        if context != pub.context:
            # The whole text, the settings or what the file is changed: start afresh.
            fresh = Published(context=context)
            state.published = pub = fresh
            doc.dirty_lines = set()
            doc.dirty_keys = set()
            state.similar_changed = set()
            doc.moved_from = None
            doc.line_shift = 0
            dirty.update(doc.found)
            for key in doc.dup_keys:
                self._dup(doc, pub, key, dirty)
            dirty.update(self._file(doc, state, pub))
            self._cross_all(doc, state, pub, dirty)
            self._not_injected(doc, state, pub, set(), dirty)
            self._similar_all(doc, state, pub, dirty)
            self._stale(doc, state, pub, dirty)
            self._conflicts(doc, state, pub, dirty)
        else:
            moved, doc.moved_from = doc.moved_from, None
            shift, doc.line_shift = doc.line_shift, 0
            touched, doc.dirty_lines = doc.dirty_lines, set()
            keys, doc.dirty_keys = doc.dirty_keys, set()
            repositioned = set(keys)  # (the keys below only moved with the lines)
            if moved is not None:
                # Lines were added or removed: what lies from `moved` on has new numbers.
                # Every finding there sits on a bullet of one of these keys.
                keys.update(b.key for b in doc.bullets[moved:] if b is not None and b.key)
                self._drop_from(pub, moved)
                dirty.update(line for line in doc.found if line >= moved)
            dirty |= touched
            for key in keys:
                self._dup(doc, pub, key, dirty)
            dirty.update(self._file(doc, state, pub))
            self._cross_all(doc, state, pub, dirty, keys)
            self._not_injected(doc, state, pub, touched, dirty)
            if moved is not None:
                dirty.update(line for line in (*pub.ni_at, *pub.file_at) if line >= moved)
            if state.similar_version != pub.sim_version:
                self._similar_all(doc, state, pub, dirty)
            else:
                changed, state.similar_changed = state.similar_changed, set()
                for key in keys:
                    changed |= state.similar_by_key.get(key, set())
                for pair in changed:
                    self._pair(doc, state, pub, pair, dirty)
            self._stale(doc, state, pub, dirty, keys, moved)
            self._conflicts(doc, state, pub, dirty, keys, repositioned)
        for line in dirty:
            self._bucket(doc, pub, line, shift)
        pub.moved = {}
        return pub

    @staticmethod
    def _drop_from(pub: Published, moved: int) -> None:
        """Forget the encoded lines from ``moved`` on (their numbers changed), keeping
        how each was encoded in :attr:`Published.moved`: a finding found again that only
        moved is not encoded again (:meth:`_bucket`).

        The findings themselves are found again by key; a finding left behind at an
        old line number is removed by identity when its key is.
        """
        at = bisect.bisect_left(pub.lines, moved)
        for line in pub.lines[at:]:
            del pub.buckets[line]
            kept = pub.encoded.pop(line, None)
            if kept is not None:  # (a line never moved has no templates yet: _bucket)
                pub.moved[line] = kept
        del pub.lines[at:]
        pub.joined = None

    def _file(self, doc: MemoryDocument, state: DocState, pub: Published) -> set[int]:
        """File-wide findings (a handful, recomputed every time): the lines they changed."""
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
            outside_project=outside or runtime.shared_store_refusal(scope),
        )
        found = file_findings(doc.lines, ctx)
        found.extend(
            Finding("buffer-behind-file", 0, 0, 0, len(doc.lines[0]), message)
            for message in state.behind
        )
        if scope is not None and outside is None:
            # `proposal` (SPEC §12): a few per store, read from the inbox's cached view.
            found.extend(review.findings(doc, runtime, scope))
        if found == pub.file:
            return set()
        lines = {f.line for f in pub.file} | {f.line for f in found}
        pub.file = found
        pub.file_at = {}
        for f in found:
            pub.file_at.setdefault(f.line, []).append(f)
        return lines

    @staticmethod
    def _dup(doc: MemoryDocument, pub: Published, key: str, dirty: set[int]) -> None:
        """The ``duplicate`` findings of one key, again."""
        for f in pub.dup.pop(key, ()):
            # By identity: after lines moved, the line may hold another key's finding.
            if pub.dup_at.get(f.line) is f:
                del pub.dup_at[f.line]
            dirty.add(f.line)
        if key in doc.dup_keys:
            found = duplicate_findings(doc.bullets_for((key,)))
            pub.dup[key] = found
            for f in found:
                pub.dup_at[f.line] = f
                dirty.add(f.line)

    def _cross_all(
        self,
        doc: MemoryDocument,
        state: DocState,
        pub: Published,
        dirty: set[int],
        keys: set[str] | None = None,
    ) -> None:
        """``cross-scope-duplicate`` findings: of ``keys``, or all when the other store changed."""
        info = state.info
        scope = info.scope
        if scope is None or info.runtime.store_refusal(scope) is not None:
            return
        runtime = info.runtime
        other = self.projects.other_keys(runtime, scope)
        if other is not pub.cross_source or keys is None:
            pub.cross_source = other
            keys = set(pub.cross) | (doc.key_lines.keys() & other.keys())
        if not keys:
            return
        other_path = str(runtime.paths["global" if scope == "project" else "project"])
        for key in keys:
            for f in pub.cross.pop(key, ()):
                if pub.cross_at.get(f.line) is f:
                    del pub.cross_at[f.line]
                dirty.add(f.line)
            if key in other and key in doc.key_lines:
                found = cross_scope_findings(doc.bullets_for((key,)), scope, other, other_path)
                pub.cross[key] = found
                for f in found:
                    pub.cross_at[f.line] = f
                    dirty.add(f.line)

    def _not_injected(
        self,
        doc: MemoryDocument,
        state: DocState,
        pub: Published,
        touched: set[int],
        dirty: set[int],
    ) -> None:
        """``not-injected`` runs: all again when the plan's decisions may have changed,
        else only the ranges of runs that begin or end on an edited line."""
        info = state.info
        scope = info.scope
        if scope is None or info.runtime.store_refusal(scope) is not None:
            return
        # The plan holds no note of an untrusted project: nothing to flag there.
        decisions, used = self.projects.decision(info.runtime)
        key = (decisions, doc.layout, used)
        if key != pub.ni_key:
            pub.ni_key = key
            plan, _ = self.projects.plan(info.runtime)
            found = {f.line: f for f in not_injected_findings(doc.noted_bullets(), scope, plan)}
            for line in pub.ni_at.keys() | found.keys():
                if pub.ni_at.get(line) != found.get(line):
                    dirty.add(line)
            pub.ni_at = found
            pub.ni_ends = {f.end_line: f.line for f in found.values()}
            return
        for line in touched:
            for first in {line, pub.ni_ends.get(line, line)}:
                f = pub.ni_at.get(first)
                if f is None:
                    continue
                pub.ni_at[first] = self._rerange(doc, f)
                # Encoded again even with the same str columns: its client columns
                # depend on the edited text (a character that became an emoji).
                dirty.add(first)

    @staticmethod
    def _rerange(doc: MemoryDocument, f: Finding) -> Finding:
        first, last = doc.bullet_at(f.line), doc.bullet_at(f.end_line)
        if first is None or last is None or (first.start, last.end) == (f.start, f.end):
            return f
        return records.replace(f, start=first.start, end=last.end)

    def _similar_all(
        self, doc: MemoryDocument, state: DocState, pub: Published, dirty: set[int]
    ) -> None:
        """Every ``similar`` finding again (the pairs were replaced as a whole)."""
        for line in pub.sim_at:
            dirty.add(line)
        pub.sim = {}
        pub.sim_at = {}
        pub.sim_version = state.similar_version
        state.similar_changed = set()
        for pair in state.similar:
            self._pair(doc, state, pub, pair, dirty)

    def _pair(
        self, doc: MemoryDocument, state: DocState, pub: Published, pair: Pair, dirty: set[int]
    ) -> None:
        """One ``similar`` pair's finding again (gone when either note is)."""
        old = pub.sim.pop(pair, None)
        if old is not None:
            at = pub.sim_at.get(old.line)
            if at is not None and at.get(pair) is old:
                del at[pair]
                if not at:
                    del pub.sim_at[old.line]
            dirty.add(old.line)
        score = state.similar.get(pair)
        if score is None or not self._enabled("similar"):
            return
        first, later = doc.first_of(pair[0]), doc.first_of(pair[1])
        if first is None or later is None:
            return
        if later.line < first.line:
            first, later = later, first
        f = pair_finding(first, later, score)
        pub.sim[pair] = f
        pub.sim_at.setdefault(f.line, {})[pair] = f
        dirty.add(f.line)

    # -- conflict (SPEC §13) -------------------------------------------------------

    def _conflicts(
        self,
        doc: MemoryDocument,
        state: DocState,
        pub: Published,
        dirty: set[int],
        keys: set[str] | None = None,
        repositioned: set[str] | None = None,
    ) -> None:
        """``conflict`` findings: of ``keys`` and the keys they can affect (or of the global
        store's notes that changed), or of every key when ``keys`` is ``None`` (a fresh start).
        ``repositioned``: the keys among them whose notes came, went or changed (the others
        only moved with the lines around them, keeping their order).

        As ``check`` computes them (:func:`memory_ls.core.conflicts.conflict_findings`):
        inside the store on both notes, and for a project store on its note of a pair
        with a global note. A keystroke re-reads only the edited notes' claims and
        re-judges only the keys it can affect: each note names the first few notes of the
        opposite claims in reading order (:class:`ConflictOrder` keeps each claim's notes in
        that order), so a note that is not among the first few of its claims, before or
        after a change, changes no other note's findings. Nothing here walks every note
        unless it starts afresh, nor every note of a claim unless one near its front changed.
        """
        info = state.info
        scope = info.scope
        if scope is None or info.runtime.store_refusal(scope) is not None:
            return
        if not self._enabled("conflict") or not state.conflicts_ready:
            return  # (the first pass runs once the claims are read: the index is None)
        theirs: ClaimingNotes | None = None
        if scope == "project":
            # The global store's key index, which _cross_all fetched just before, is a new
            # object exactly when that store changed (both caches are keyed alike): only
            # then is the claims cache asked (each ask looks at the file or the buffer).
            seen = pub.cross_source
            if seen is None or seen is not pub.conf_seen or pub.conf_source is None:
                pub.conf_seen = seen
                theirs = self.projects.global_claims(info.runtime)
            else:
                theirs = pub.conf_source

        def position(ref: ConflictRef) -> tuple[int, int]:
            if isinstance(ref, str):
                return (0, doc.key_lines[ref][0])
            notes = theirs.by_key[ref[1]] if theirs is not None else ()
            return (1, notes[0].line)

        index = pub.conf_index
        if index is None or keys is None:
            # Afresh: every note in reading order (this store's by line, then the global
            # store's), each key judged.
            pub.conf_source = theirs
            index = pub.conf_index = ConflictOrder()
            refs: list[ConflictRef] = [k for k in doc.key_lines if claims_of_key(k)]
            if theirs is not None:
                refs.extend(("global", k) for k in theirs.by_key)
            refs.sort(key=position)
            for ref in refs:
                index.append(ref, claims_of_key(ref if isinstance(ref, str) else ref[1]))
            for key in doc.key_lines:
                if key in index:
                    self._key_conflicts(doc, pub, scope, index, key, dirty)
            return
        near = CONFLICT_PER_NOTE + 2  # a note's window: the first few, and itself
        affected: set[str] = set()
        gone: list[ConflictRef] = []
        came: list[ConflictRef] = []
        moved: list[ConflictRef] = []
        for key in keys:
            claims = claims_of_key(key)
            if not claims:
                continue  # a note that makes no claim is in no pair (claims: by key alone)
            present = key in doc.key_lines
            if key in index and (not present or repositioned is None or key in repositioned):
                gone.append(key)
            if present and (key not in index or repositioned is None or key in repositioned):
                came.append(key)
            elif present:
                moved.append(key)  # its lines moved: its findings' numbers, and theirs
            if (
                not present  # its findings go
                or key not in index  # it came
                or key in pub.conf  # it names notes: their lines, or which ones
                or (len(doc.key_lines[key]) > 1 and self_conflict(claims))
            ):
                affected.add(key)  # (else it names nothing, so nothing conflicts with it)
        if theirs is not pub.conf_source:
            # The global store changed (or this is the first look): only its notes that
            # came, went or moved are indexed again.
            old = pub.conf_source.by_key if pub.conf_source is not None else {}
            new = theirs.by_key if theirs is not None else {}
            for k in old.keys() | new.keys():
                if old.get(k) != new.get(k):
                    gref: ConflictRef = ("global", k)
                    if gref in index:
                        gone.append(gref)
                    if k in new:
                        came.append(gref)
            pub.conf_source = theirs
        # Who may name a changed note: the notes of the opposite claims, if it is (or was)
        # near the front of one of its own claims.
        for ref in (*gone, *moved):
            if index.near(ref, near):
                affected.update(r for r in index.partners(ref) if isinstance(r, str))
        for ref in gone:
            index.remove(ref)
        for ref in came:
            index.add(ref, claims_of_key(ref if isinstance(ref, str) else ref[1]), position)
        for ref in (*came, *moved):
            if index.near(ref, near):
                affected.update(r for r in index.partners(ref) if isinstance(r, str))
        for key in affected:
            self._key_conflicts(doc, pub, scope, index, key, dirty)

    def _key_conflicts(
        self,
        doc: MemoryDocument,
        pub: Published,
        scope: Scope,
        index: ConflictOrder,
        key: str,
        dirty: set[int],
    ) -> None:
        """The ``conflict`` findings on the notes of ``key``, again: as ``check`` makes them
        (:func:`memory_ls.core.conflicts.conflict_findings`), each note names the first
        :data:`CONFLICT_PER_NOTE` notes it conflicts with in reading order (this store's by
        line, then the global store's), within the document's :data:`CONFLICT_LIMIT`."""
        pub.conf_count -= _drop_key_findings(pub.conf, pub.conf_at, key, dirty)
        if key not in doc.key_lines or key not in index:
            return
        candidates: list[_Candidate] = []
        source = pub.conf_source
        # The first few other notes of each opposite claim hold the first few overall
        # (a note's copies included: each other note's first copy is in the window).
        for ref, subject in index.first(key, CONFLICT_PER_NOTE + 1):
            if isinstance(ref, str):
                candidates.extend(
                    ((0, y.line), y, scope, None, subject, ref) for y in doc.bullets_for((ref,))
                )
            elif source is not None:
                candidates.extend(
                    ((1, y.line), y, "global", source.path, subject, ref)
                    for y in source.by_key.get(ref[1], ())
                )
        xs = doc.bullets_for((key,))
        claims = claims_of_key(key)
        itself = conflict_subject(claims, claims) if len(xs) > 1 else None
        if itself is not None:
            # Copies of a note that says both ways: each conflicts with the others.
            candidates.extend(((0, y.line), y, scope, None, itself, key) for y in xs)
        # One more than a note names: a copy of the note itself may be among them.
        first = heapq.nsmallest(CONFLICT_PER_NOTE + 1, candidates, key=lambda c: c[0])
        found: list[Finding] = []
        for x in xs:
            named = 0
            for _, y, other_scope, path, subject, _ in first:
                if named == CONFLICT_PER_NOTE or pub.conf_count >= CONFLICT_LIMIT:
                    break
                if path is None and y.line == x.line:
                    continue
                f = conflict_finding(x, y, scope, other_scope, subject, path)
                pub.conf_at.setdefault(x.line, []).append(f)
                found.append(f)
                pub.conf_count += 1
                named += 1
                dirty.add(x.line)
        if found:
            pub.conf[key] = found

    def _bucket(self, doc: MemoryDocument, pub: Published, line: int, shift: int = 0) -> None:
        """Encode the diagnostics on ``line`` again (its findings or its text changed).

        After lines moved by ``shift``, a finding equal to one encoded ``shift`` lines
        earlier but for its own line numbers, on lines of the same text, takes that
        one's template: a line that only moved costs a splice, not an encoding.

        Templates are made only when lines move: a line encoded where nothing moved
        (every line of a store's first publish, an edited line) is encoded as it is,
        a third cheaper, and gets its templates the first time it moves.
        """
        found = self._on_line(doc, pub, line)
        overrides: Mapping[str, str] = self.projects.settings.severity
        before = pub.moved.get(line - shift) if pub.moved else None
        lines = doc.lines
        count = len(lines)
        kept: list[Encoded] = []
        encoded: list[tuple[int, str, bytes]] = []
        for f in found:
            # The finding's own default (a conflict across scopes is Information, SPEC §13);
            # the user's memoryLs.severity wins over it.
            level = overrides.get(f.code) or f.severity
            if level == "off":
                continue
            if not shift:
                item = self.diagnostic(doc, f, SEVERITY_NUMBER[level])
                encoded.append((f.start, f.code, _encode(item).encode()))
                continue
            texts = tuple(
                lines[i] if 0 <= i < count else ""
                for i in (f.line, f.end_line, *(r.line for r in f.related if r.path is None))
            )
            ref = _ref_of(f)
            shape = _shape(f, ref)
            template = None
            for e in before or ():
                if e.shape == shape and e.level == level and e.texts == texts:
                    template = e.template
                    break
            if template is None:
                template = self._template(doc, f, SEVERITY_NUMBER[level], ref)
            kept.append(Encoded(shape, level, texts, template))
            body = template.replace(_LINE_HOLE, b'"line": %d' % f.line).replace(
                _END_HOLE, b'"line": %d' % f.end_line
            )
            if ref is not None:
                body = (
                    body.replace(_REF_HOLE, b'"line": %d' % ref)
                    .replace(_FIRST_HOLE, b'"firstLine": %d' % ref)
                    .replace(_MESSAGE_HOLE, b"on line %d" % (ref + 1), 1)
                )
            encoded.append((f.start, f.code, body))
        had = line in pub.buckets
        if kept:
            pub.encoded[line] = kept
        else:
            pub.encoded.pop(line, None)
        if encoded:
            encoded.sort()
            body = b", ".join(e[2] for e in encoded)
            if pub.buckets.get(line) == body:
                return
            pub.buckets[line] = body
            if not had:
                bisect.insort(pub.lines, line)
        elif had:
            del pub.buckets[line]
            del pub.lines[bisect.bisect_left(pub.lines, line)]
        else:
            return
        pub.joined = None

    @staticmethod
    def _on_line(doc: MemoryDocument, pub: Published, line: int) -> list[Finding]:
        """Every finding whose diagnostic starts on ``line``."""
        found: list[Finding] = []
        found.extend(pub.file_at.get(line, ()))
        found.extend(doc.found.get(line, ()))
        for source in (pub.dup_at, pub.cross_at, pub.ni_at):
            f = source.get(line)
            if f is not None:
                found.append(f)
        sim = pub.sim_at.get(line)
        if sim:
            found.extend(sim.values())
        found.extend(pub.st_at.get(line, ()))
        found.extend(pub.conf_at.get(line, ()))
        return found

    def data_of(
        self, doc: MemoryDocument, code: str, where: Json, message: str, note: str | None
    ) -> object:
        """The full ``data`` of the current diagnostic with this code, range (LSP JSON)
        and message, or ``None``: what a quick fix is built from (the published ``data``
        holds only the code, the line and the note's hash: :func:`lean_wire_data`).

        With the note's hash the client's data named (``noteHash``), only the range's first
        line is compared, not its columns: clients turn ranges into their own units and
        back (Neovim 0.7 sends byte columns), and the hash says which note's finding it
        is. Without it (a client that drops ``data``), the whole range must match: two
        notes with the same message on one line at different times differ only there.
        """
        state = self.states.get(doc.uri)
        if state is None:
            return None
        pub = self._update(doc, state, state.published)
        start = where.get("start") if isinstance(where, dict) else None
        line = start.get("line") if isinstance(start, dict) else None
        if not isinstance(line, int):
            return None
        for f in self._on_line(doc, pub, line):
            if f.code != code or f.message != message:
                continue
            if note is not None:
                mine = f.data.get("note")
                if isinstance(mine, str) and note_hash(mine) == note:
                    return wire_data(f)
            elif self.range(doc, f.line, f.start, f.end_line, f.end) == where:
                return wire_data(f)
        return None

    def _template(self, doc: MemoryDocument, f: Finding, severity: int, ref: int | None) -> bytes:
        """``f`` encoded with holes for its own line numbers (and ``ref``'s, see
        :func:`_ref_of`), to be spliced in by :meth:`_bucket`.

        The bytes of :meth:`diagnostic`'s dict with those holes, written directly: every
        diagnostic of a store is encoded once when it opens (138 on the bench's 4,500
        notes), and building then encoding each dict cost twice as much. Its strings
        and its ``data`` go through ``json``'s own C encoders
        (``tests/server/test_documents.py`` holds it to :meth:`diagnostic`)."""
        lines = doc.lines
        count = len(lines)
        enc = self.encoding
        first = lines[f.line] if 0 <= f.line < count else ""
        last = lines[f.end_line] if 0 <= f.end_line < count else ""
        data = lean_wire_data(f)
        if data.get("line") == f.line:
            data["line"] = _LINE
        message = f.message
        if ref is not None:
            data["firstLine"] = _REF
            message = message.replace(f"on line {ref + 1}", "on line \x00", 1)
        a, b = to_client(first, f.start, enc), to_client(last, f.end, enc)
        parts = [
            f'{{"range": {{"start": {{"line": {_LINE}, "character": {a}}}, '
            f'"end": {{"line": {_END}, "character": {b}}}}}, "severity": {severity}, "code": ',
            _string(f.code),
            ', "source": ',
            _string(SOURCE),
            ', "message": ',
            _string(message),
            ', "data": ',
            _encode(data),
        ]
        if f.related and self.related:
            parts.append(', "relatedInformation": [')
            for i, r in enumerate(f.related):
                uri = doc.uri if r.path is None else _uri(r.path)
                if r.path is None:
                    line = lines[r.line] if 0 <= r.line < count else ""
                    start, end = to_client(line, r.start, enc), to_client(line, r.end, enc)
                else:  # columns in another file are not known in client units: line only
                    start = end = 0
                at = _REF if ref is not None and uri == doc.uri else r.line
                comma = ", " if i else ""
                parts.append(
                    f'{comma}{{"location": {{"uri": {_string(uri)}, "range": {{"start": '
                    f'{{"line": {at}, "character": {start}}}, "end": {{"line": {at}, '
                    f'"character": {end}}}}}}}, "message": {_string(r.message)}}}'
                )
            parts.append("]")
        parts.append("}")
        return "".join(parts).encode()

    def _stale(
        self,
        doc: MemoryDocument,
        state: DocState,
        pub: Published,
        dirty: set[int],
        keys: set[str] | None = None,
        moved: int | None = None,
    ) -> None:
        """``stale-path``, ``stale-script`` and ``instruction-duplicate`` (SPEC §13): the
        notes of ``keys`` judged again, or every note when the project's files changed,
        or, when lines moved, the notes from ``moved`` on (every line an edit changed
        is there: the document moves ``moved`` back over earlier edits).

        The judge answers from what it cached of the tree and the instruction files
        (``project_watch.py``); a note it has not seen costs a few regular expressions
        and one fuzzy scan of the instruction lines. Never a read or a walk.
        """
        judge = self.files.judge_for(doc.uri, state.info)
        if judge is not None and not any(self._enabled(code) for code in STALE_CODES):
            judge = None  # all three off: nothing to judge
        lines = doc.lines
        if judge is not pub.st_source or keys is None:
            # Every note again, in one pass over the lines (no per-key look-ups).
            pub.st_source = judge
            for line in pub.st_at:
                dirty.add(line)
            pub.st = {}
            pub.st_at = {}
            if judge is None:
                return
            for b in doc.bullets:
                if b is None or not b.key:
                    continue
                found = judge.findings(b, lines[b.line])
                if found:
                    pub.st.setdefault(b.key, []).extend(found)
                    pub.st_at.setdefault(b.line, []).extend(found)
                    dirty.add(b.line)
            return
        if moved is not None:
            # One pass over the lines from `moved` on: cheaper than thousands of keys.
            for line in [line for line in pub.st_at if line >= moved]:
                del pub.st_at[line]
                dirty.add(line)
            if judge is not None:
                for b in doc.bullets[moved:]:
                    if b is not None and b.key:
                        found = judge.findings(b, lines[b.line])
                        if found:
                            pub.st_at[b.line] = found
                            dirty.add(b.line)
            pub.st = {}
            for line, on_line in pub.st_at.items():
                b = doc.bullets[line]
                if b is not None:
                    pub.st.setdefault(b.key, []).extend(on_line)
            return
        for key in keys:
            _drop_key_findings(pub.st, pub.st_at, key, dirty)
            if judge is None or key not in doc.key_lines:
                continue
            found = []
            for b in doc.bullets_for((key,)):
                found.extend(judge.findings(b, lines[b.line]))
            if found:
                pub.st[key] = found
                for f in found:
                    pub.st_at.setdefault(f.line, []).append(f)
                    dirty.add(f.line)

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
    def all_pairs(keys: list[str], threshold: float) -> dict[Pair, float]:
        """Every close pair among ``keys`` (run in a worker thread).

        The matrix pass on one worker (from :data:`~memory_ls.core.similar.MATRIX_FROM`
        keys on): ``cdist`` releases the GIL while it scores a block, so the event loop
        answers keystrokes meanwhile, and one worker leaves the other core to the loop.
        It is read without numpy: numpy's ~16 MB would stay in the server for good.
        """
        pairs = similar_pairs(keys, threshold, limit=SIMILAR_LIMIT, workers=1)
        return _dedupe_pairs({(keys[i], keys[j]): score for i, j, score in pairs})

    def similar_incremental(self, doc: MemoryDocument) -> None:
        """Compare only the notes added (or gone) since the last pass against the rest.

        A pair's score depends on its two keys alone, so only the pairs of a key
        that came or went can change; the diagnostics re-encode just those.
        """
        state = self.states.get(doc.uri)
        if state is None or not state.similar_ready:
            return
        touched, doc.touched_keys = doc.touched_keys, set()
        if not touched:
            return
        changed = state.similar_changed
        for key in touched:
            for pair in list(state.similar_by_key.get(key, ())):
                state._drop_pair(pair)
                changed.add(pair)
        present = [k for k in touched if k in doc.key_lines]
        if present and len(doc.key_lines) > 1 and doc.size <= MAX_STORE_BYTES:
            keys = list(doc.key_lines)
            threshold = self.similar_threshold()
            for key in present:
                for idx, score in similar_to(key, keys, threshold):
                    if len(state.similar) >= SIMILAR_LIMIT:
                        break
                    other = keys[idx]
                    pair = (key, other) if key < other else (other, key)
                    if pair not in state.similar:
                        state._add_pair(pair, score)
                        changed.add(pair)

    def _enabled(self, code: str) -> bool:
        return self.projects.settings.severity.get(code) != "off"

    # -- LSP form ------------------------------------------------------------------

    def diagnostic(self, doc: MemoryDocument, f: Finding, severity: int) -> Json:
        """One finding as an LSP ``Diagnostic``."""
        item: Json = {
            "range": self.range(doc, f.line, f.start, f.end_line, f.end),
            "severity": severity,
            "code": f.code,
            "source": SOURCE,
            "message": f.message,
            "data": lean_wire_data(f),
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


def _drop_key_findings(
    by_key: dict[str, list[Finding]], by_line: dict[int, list[Finding]], key: str, dirty: set[int]
) -> int:
    """Forget the findings kept for ``key`` (in ``by_key`` and on their lines in
    ``by_line``), marking their lines dirty; how many there were."""
    found = by_key.pop(key, [])
    for f in found:
        at = by_line.get(f.line)
        if at is not None:
            # By identity: after lines moved, the line may hold another key's finding.
            kept = [g for g in at if g is not f]
            if kept:
                by_line[f.line] = kept
            else:
                del by_line[f.line]
        dirty.add(f.line)
    return len(found)


def _uri(path: str) -> str:
    return uri_of_path(path)


def _line_range(line: int) -> Json:
    return {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}


def _dedupe_pairs(pairs: dict[Pair, float]) -> dict[Pair, float]:
    out: dict[Pair, float] = {}
    for (a, b), score in pairs.items():
        if a != b:
            out[(a, b) if a < b else (b, a)] = score
    return out
