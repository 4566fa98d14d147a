"""Notes that give opposite instructions: the ``conflict`` check (SPEC §13).

Rule-based, precision first. Each note is read into *claims* (:func:`note_claims`):
a polarity (do / use, or don't), the thing it is about (its *subject*: the object
of use / prefer / avoid / no, or the verb phrase after always / never / don't),
and the narrowing *context* (a prepositional phrase or clause: "for tests", "in
CI", "when ..."). Two notes conflict when a claim of one and a claim of the other
have the same subject, opposite polarities and the same context (neither is
limited by a context the other lacks). Never from a fuzzy score.

Built to run incrementally: :func:`note_claims` depends on the note's key alone
and is cached by it, and :class:`ConflictIndex` maps each subject to the notes
that speak of it, so a changed note is compared only with the notes about the
same subjects.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from memory_ls.core.checks import ConflictData, Finding, Related, Severity
from memory_ls.core.notes import Bullet
from memory_ls.core.records import field, record
from memory_ls.core.text import escape_unseen, near_duplicate_key

if TYPE_CHECKING:
    from memory_ls.core.scopes import Scope


@record
class Claim:
    """One instruction a note gives: do (``True``) or don't (``False``) ``subject``,
    within ``context`` (empty: everywhere)."""

    positive: bool
    subject: str
    context: frozenset[str] = frozenset()


# -- reading a note ------------------------------------------------------------------------

# Clauses: sentences, semicolons, dashes, "Label: rest", and "... and never ..." joins.
_CLAUSE_JOIN = r"(?:and|but|so|then|or)\s+(?=(?:always|never|don't|do not|avoid|prefer|use|no)\b)"
_CLAUSE_SPLIT_PLAIN = r"[.!?](?:\s+|$)|;\s*|\s+[—–]\s+|\s+-\s+|:\s+|\(|\)|,?\s+" + _CLAUSE_JOIN
_CLAUSE_SPLIT_RE = re.compile(
    rf"[.!?](?:\s+|$)|;\s*|:\s+|\(|\)|,\s+{_CLAUSE_JOIN}|\s+(?:[—–]\s+|-\s+|{_CLAUSE_JOIN})"
)
""":data:`_CLAUSE_SPLIT_PLAIN`, the same matches, each alternative starting with a character
of its own: ``re`` then skips every position that starts none (the plain form's ``,?``
made it try all of them at each character; ~3x slower on a keystroke's note)."""
# Who speaks before the instruction: "we use", "you should never", "the user prefers".
_SPEAKER = (
    r"(?:(?:please|important|note|rule|also|and|but|so|then|instead|here)\s*,?\s+)*"
    r"(?:(?:we|you|i|the user|the team|this (?:repo|repository|project|codebase))\s+)?"
)
_MODAL = r"(?:(?:should|must|will|shall|can|do|does)\s+)?"
_NEGATORS = (
    r"never|don't|dont|do not|doesn't|does not|must not|mustn't|should not|shouldn't"
    r"|cannot|can't|won't|will not|no longer|stop|avoid|avoids|no"
)
_POSITIVES = r"always|use|uses|prefer|prefers"
_LEAD_RE = re.compile(
    rf"^{_SPEAKER}{_MODAL}(?P<mark>(?:{_NEGATORS})|(?:{_POSITIVES}))\b\s*(?P<rest>.*)$"
)
# After the marker, the verbs that make the claim about using a thing.
_USE_VERB_RE = re.compile(
    r"^(?:(?:ever|always|really|ever again)\s+)?"
    r"(?:use|uses|using|prefer|prefers|preferring|rely on|choose|pick|go with"
    r"|to use|reach for)\b\s*"
)
# Words that start a narrowing context (a prepositional phrase or a clause).
_CONTEXT_RE = re.compile(
    r"\s+(?=(?:for|in|on|when|whenever|unless|if|while|during|inside|within|outside|except"
    r"|before|after|with|without|only|that|which|who|where|to|at|from|under|until|per"
    r"|because|since|as|so|via|by|against|between|into|across|except)\b)"
)
_COMPARE_RE = re.compile(r"\s+(?:over|instead of|rather than)\s+|,\s*(?:and\s+)?not\s+")
# Tails that do not narrow anything: the whole project, a softener, a reason.
_NOT_NARROWING_RE = re.compile(
    r"^(?:(?:in|for|across|throughout|within|on) (?:this|our|the|all) "
    r"(?:repo|repository|project|codebase|code base|monorepo|workspace|code|team)s?"
    r"|everywhere|here|at all|ever|anymore|any more|by default|in general|generally|again"
    r"|(?:where|when|whenever|if) possible|if you can|please|from now on|going forward"
    r"|(?:because|since|as|so) .*|via .*)$"
)
# Adverbs at the end of a subject that neither name the thing nor narrow it ("use pnpm here").
_TRAILING_ADVERBS = (
    "here|everywhere|always|at all|anymore|any more|again|please|instead|too"
    "|as well|by default|now|whenever possible|where possible|if possible"
)
# Matched on the *reversed* subject, from its start: ``(?:\s+(?:ADV))+\W*$`` searched
# forwards tries every position, which is quadratic in a long run of adverbs ("use a
# here here … here x": seconds for a 16 kB line, on every keystroke in it).
_TRAILING_ADVERBS_REVERSED_RE = re.compile(
    r"^\W*(?:(?:" + "|".join(re.escape(w[::-1]) for w in _TRAILING_ADVERBS.split("|")) + r")\s+)+"
)
_ARTICLES_RE = re.compile(r"\b(?:a|an|the|any|some)\s+(?=\S)")
_STRIP_CHARS = "`'\"*_“”‘’ "
_TRAILING_PUNCTUATION = ".,;:!?)("


def _normalise_phrase(text: str) -> str:
    text = text.replace("`", "").replace("*", "").replace('"', "").replace("“", "")
    text = text.replace("”", "")
    text = _ARTICLES_RE.sub("", text)
    text = _strip_trailing(text.strip(_STRIP_CHARS))
    return " ".join(text.split())


def _strip_trailing(text: str) -> str:
    """``text`` without trailing whitespace and ``.,;:!?)(`` (a regular expression
    ``[…]+$`` is quadratic in a long run of them)."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in _TRAILING_PUNCTUATION):
        end -= 1
    return text[:end]


def _drop_trailing_adverbs(text: str) -> str:
    """``text`` without trailing adverbs ("use pnpm here", "… anymore."), in linear time."""
    m = _TRAILING_ADVERBS_REVERSED_RE.match(text[::-1])
    return text if m is None else text[: len(text) - m.end()]


def _split_context(text: str) -> tuple[str, frozenset[str]]:
    """``text`` as its head (the subject) and its narrowing phrases."""
    parts = _CONTEXT_RE.split(text)
    head = _drop_trailing_adverbs(parts[0])
    context: set[str] = set()
    for part in parts[1:]:
        phrase = _normalise_phrase(part)
        if phrase and not _NOT_NARROWING_RE.match(phrase):
            context.add(phrase)
    return head, frozenset(context)


def _items(subject: str, positive: bool) -> list[str]:
    """The things a subject names: "ruff and mypy" is two; "let or const" is two only for
    a prohibition ("never var or let" forbids each; "use let or const" requires neither)."""
    joiner = r"\s*,\s*|\s+and\s+|\s+or\s+" if not positive else r"\s*,\s*|\s+and\s+"
    pieces = [p for p in re.split(joiner, subject) if p]
    if len(pieces) > 1 and all(len(p.split()) <= 3 for p in pieces):
        return pieces
    return [subject]


def _clause_claims(clause: str) -> list[Claim]:
    m = _LEAD_RE.match(clause.strip())
    if m is None:
        return []
    mark, rest = m.group("mark"), m.group("rest")
    positive = re.fullmatch(_POSITIVES, mark) is not None
    if mark == "no" and re.match(r"(?:need|one|problem|longer|more|less|matter)\b|,", rest):
        return []  # "no need to ...", "no more than ...", "no, ..."
    if not positive and rest.startswith("always "):
        return []  # "don't always use X" allows X sometimes: not the opposite of "use X"
    uses = mark in ("use", "uses", "prefer", "prefers", "avoid", "avoids", "no")
    verb = _USE_VERB_RE.match(rest)
    if verb is not None:
        rest, uses = rest[verb.end() :], True
    elif mark in ("avoid", "avoids", "stop") and rest.startswith("using "):
        rest, uses = rest[len("using ") :], True
    if not rest.strip():
        return []
    compared = _COMPARE_RE.split(rest, maxsplit=1)
    head, context = _split_context(compared[0])
    claims: list[Claim] = []
    others: list[str] = []
    if len(compared) == 2 and positive:
        other_head, other_context = _split_context(compared[1])
        context = context | other_context
        others = _items(_normalise_phrase(other_head), False)
    subject = _normalise_phrase(head)
    if not subject:
        return []
    prefix = "use " if uses else ""
    for item in _items(subject, positive):
        if _named(item):
            claims.append(Claim(positive, prefix + item, context))
    for item in others:  # "X over Y", "X instead of Y", "X, not Y" also say: not Y
        if item and _named(item):
            claims.append(Claim(False, prefix + item, context))
    return claims


_PRONOUN_RE = re.compile(
    r"\b(?:it|its|this|that|these|those|them|they|one|ones|something|anything|everything"
    r"|nothing|there|here|so)\b"
)


def _named(subject: str) -> bool:
    """Whether a subject names its thing: "use it" or "run them" could be about anything."""
    return _PRONOUN_RE.search(subject) is None


# A note that starts with a short label ("Frontend: ..."); the label narrows it unless it
# only stresses it ("Important: ...").
_LABEL_RE = re.compile(r"^\s*([a-z][\w ./-]{0,30}?)\s*:\s+")
_EMPHASIS_LABEL_RE = re.compile(
    r"important|note|nb|rule|rules|reminder|remember|tip|warning|critical|fyi|always|never"
    r"|convention|conventions|preference|preferences|policy|gotcha|key|lesson|learned"
)


# Every claim starts with one of these words (see _LEAD_RE): a note without any makes
# none. Looked for first, because most notes make no claim and an editor opening a store
# of thousands of notes reads every one.
_ANY_MARK_RE = re.compile(
    r"\b(?:n(?:ever|o longer|o)|d(?:on't|ont|o not|oesn't|oes not)|m(?:ust not|ustn't)"
    r"|s(?:hould not|houldn't|top)|c(?:annot|an't)|w(?:on't|ill not)|a(?:void|voids|lways)"
    r"|u(?:se|ses)|p(?:refer|refers))\b"
)
"""``\\b(?:{_NEGATORS}|{_POSITIVES})\\b``, the words grouped by their first letter (in their
order within it, so a match is the same): ``re`` tries each of the 24 words at every
position of a store's joined keys otherwise (~2x slower; a test holds the two equal)."""


def _unemphasised(key: str) -> str:
    """``key`` without emphasis marks: "**never** use X" claims what "never use X" does."""
    return key.replace("*", "").replace("__", "")


@functools.lru_cache(maxsize=65536)
def claims_of_key(key: str) -> tuple[Claim, ...]:
    """The claims of a note, from its near-duplicate key (lowercase, trimmed): cached, so
    an edit reads only the notes it changed."""
    key = _unemphasised(key)
    if _ANY_MARK_RE.search(key) is None:
        return ()
    return read_claims(key)


# A note's history, as the quick fix "Merge the two notes" writes it: "never use X (was:
# use X)" says what to do now, and what it replaced is no claim.
_HISTORY_OPEN_RE = re.compile(r"\((?:was|previously|formerly):?\s")


def _drop_history(key: str) -> str:
    """``key`` with each history part, ``(was: …)``, replaced by a space: with what it
    holds, parentheses and history included (a merged note merged again reads "use X
    (was: never use X (was: use X))", whose inner part is history too). Unclosed
    parentheses are left as they are. Linear: one scan with a stack."""
    if "(" not in key:
        return key
    opened: list[tuple[int, bool]] = []  # each open parenthesis: where, and whether history
    inside = 0  # how many of them are history
    cut: list[tuple[int, int]] = []  # the outermost history parts, in order
    for i, char in enumerate(key):
        if char == "(":
            history = _HISTORY_OPEN_RE.match(key, i) is not None
            opened.append((i, history))
            inside += history
        elif char == ")" and opened:
            start, history = opened.pop()
            if history:
                inside -= 1
                if not inside:
                    cut.append((start, i + 1))
    if not cut:
        return key
    pieces, at = [], 0
    for start, end in cut:
        pieces.append(key[at:start])
        at = end
    pieces.append(key[at:])
    return " ".join(pieces)


def read_claims(key: str) -> tuple[Claim, ...]:
    """The claims of a key whose emphasis is removed (:func:`claims_of_key` without its
    cache and its quick look for a marker word)."""
    key = _drop_history(key)
    label = _LABEL_RE.match(key)
    scope: frozenset[str] = frozenset()
    if label is not None:
        key = key[label.end() :]
        name = _normalise_phrase(label.group(1))
        if name and not _EMPHASIS_LABEL_RE.fullmatch(name):
            scope = frozenset({name})  # "Frontend: use Tailwind" speaks of the frontend only
    claims: list[Claim] = []
    for clause in _CLAUSE_SPLIT_RE.split(key):
        if clause and clause.strip():
            claims.extend(
                Claim(c.positive, c.subject, c.context | scope) for c in _clause_claims(clause)
            )
    return tuple(dict.fromkeys(claims))


def note_claims(note: str) -> tuple[Claim, ...]:
    """The claims a note makes (see the module's docstring)."""
    return claims_of_key(near_duplicate_key(note))


def conflict_subject(a: Iterable[Claim], b: Iterable[Claim]) -> str | None:
    """The subject two notes' claims disagree on, or ``None``: the pairwise decision."""
    theirs = {(c.subject, c.positive, c.context) for c in b}
    for c in a:
        if (c.subject, not c.positive, c.context) in theirs:
            return c.subject.removeprefix("use ")
    return None


def notes_conflict(a: str, b: str) -> str | None:
    """Whether two notes give opposite instructions; the subject when they do."""
    return conflict_subject(note_claims(a), note_claims(b))


# -- incrementally, over many notes --------------------------------------------------------


MAX_CONFLICTS_PER_NOTE = 5
"""A note is reported in conflict with at most this many others: the first ones in
reading order (its own store's by line, then the global store's), whichever of its
claims they contradict; the editor and ``check`` pick the same ones. A store of 17,000 "use X" and 17,000 "never use X" notes
has 289 million conflicting pairs: all of them would never be computed, let alone read.
Every note of such a store is still flagged, each pointing at notes it disagrees with."""

_ClaimKey = tuple[str, bool, frozenset[str]]


@record(frozen=False)
class ConflictIndex:
    """Notes by the claims they make: a changed note is compared only with the notes that
    make the opposite claim, found by one lookup per claim. Refs are whatever the caller
    uses to name a note (``(scope, key)``, say); the index holds no text but the claims."""

    _claims: dict[Hashable, tuple[Claim, ...]] = field(default_factory=dict)
    _by_claim: dict[_ClaimKey, dict[Hashable, None]] = field(default_factory=dict)
    """Each claim's notes, in the order they were added (a dict as an ordered set)."""
    _rank: dict[Hashable, int] = field(default_factory=dict)
    """When each note was (last) added: the order :meth:`conflicts_of` answers in."""
    _added: int = 0

    def add(self, ref: Hashable, key: str) -> None:
        """Index a note (its key) under ``ref``, replacing what ``ref`` held."""
        self.remove(ref)
        claims = claims_of_key(key)
        if not claims:
            return
        self._claims[ref] = claims
        self._rank[ref] = self._added
        self._added += 1
        for c in claims:
            self._by_claim.setdefault((c.subject, c.positive, c.context), {})[ref] = None

    def __contains__(self, ref: object) -> bool:
        """Whether ``ref`` is indexed (a note that makes a claim)."""
        return ref in self._claims

    def remove(self, ref: Hashable) -> None:
        """Forget a note."""
        self._rank.pop(ref, None)
        for c in self._claims.pop(ref, ()):
            claim = (c.subject, c.positive, c.context)
            refs = self._by_claim.get(claim)
            if refs is not None:
                refs.pop(ref, None)
                if not refs:
                    del self._by_claim[claim]

    def conflicts_of(
        self, ref: Hashable, limit: int | None = MAX_CONFLICTS_PER_NOTE
    ) -> list[tuple[Hashable, str]]:
        """The notes ``ref`` conflicts with, in the order they were indexed (at most the
        first ``limit``; ``None``: all), and the subject of each conflict: the first of its
        claims that the other note contradicts, as :func:`conflict_subject` says.

        A caller that indexes notes in reading order gets "the first ``limit`` conflicting
        notes in reading order", whichever claims they contradict."""
        subjects: dict[Hashable, str] = {}
        for c in self._claims.get(ref, ()):
            taken = 0
            for other in self._by_claim.get((c.subject, not c.positive, c.context), {}):
                if other == ref:
                    continue
                # A group is in indexing order, so the first `limit` overall are among the
                # first `limit` of their own group: bounded work per claim.
                if limit is not None and taken >= limit:
                    break
                taken += 1
                subjects.setdefault(other, c.subject.removeprefix("use "))
        found = sorted(subjects, key=self._rank.__getitem__)
        if limit is not None:
            found = found[:limit]
        return [(other, subjects[other]) for other in found]

    def pairs(self) -> list[tuple[Hashable, Hashable, str]]:
        """Every conflicting pair once (in the order the refs were added)."""
        order = {ref: i for i, ref in enumerate(self._claims)}
        out = []
        for ref in self._claims:
            for other, subject in self.conflicts_of(ref, limit=None):
                if order[ref] < order[other]:
                    out.append((ref, other, subject))
        return out


# -- findings ------------------------------------------------------------------------------


def _marked(bullets: Sequence[Bullet]) -> list[int]:
    """The indices of the notes whose key holds a marker word (:data:`_ANY_MARK_RE`, on the
    key as :func:`claims_of_key` reads it) where a claim may start (:func:`_may_lead`):
    the only ones that can make a claim. One search over the keys joined by newlines (no
    marker spans one, and a newline is a word boundary as the end of a key is), instead
    of one call per note; only the notes found are read (:func:`read_claims`: ~20 us a
    note, and 1 in 8 of the bench's 4,500 holds a marker word, mostly mid-sentence)."""
    if not bullets:
        return []
    keys = [b.key for b in bullets]
    # Emphasis removed from them all at once: no "__" spans two keys, a newline between.
    joined = "\n".join(keys).replace("*", "").replace("__", "")
    parts = joined.split("\n")
    if len(parts) != len(keys):  # a key of several lines (not from a file's lines)
        return [i for i, k in enumerate(keys) if _ANY_MARK_RE.search(_unemphasised(k))]
    starts = list(itertools.accumulate((len(p) + 1 for p in parts[:-1]), initial=0))
    found: list[int] = []
    for m in _ANY_MARK_RE.finditer(joined):
        at = m.start()
        i = bisect.bisect_right(starts, at) - 1
        if (not found or found[-1] != i) and _may_lead(joined[starts[i] : at]):
            found.append(i)
    return found


_LEAD_DELIMITERS = frozenset(".!?;:()—–-")
"""The last character of each of :data:`_CLAUSE_SPLIT_RE`'s separators but the joins (and of
a label, and of a history part :func:`_drop_history` takes out)."""
_LEAD_WORDS = frozenset(
    {"please", "important", "note", "rule", "also", "and", "but", "so", "then", "instead"}
    | {"here", "we", "you", "i", "user", "team", "repo", "repository", "project", "codebase"}
    | {"should", "must", "will", "shall", "can", "do", "does", "or"}
)
"""The words that may stand right before a claim's marker word in :data:`_LEAD_RE` (its
speaker's and modal's last words) or a join of :data:`_CLAUSE_SPLIT_RE` ("... and never")."""
_LAST_LETTERS_RE = re.compile(r"[a-z]*$")


def _may_lead(before: str) -> bool:
    """Whether a marker word after ``before`` (its key's text before it, emphasis removed)
    may start a claim: ``before`` ends (whitespace aside) where a clause may start (the
    key's start, a separator), or with a word :data:`_LEAD_RE` allows before the marker.

    A quick look, never a verdict: a ``False`` is sure (the marker is inside a clause, where
    :data:`_LEAD_RE` cannot take it: "... keep use large npm ..."), a ``True`` is checked by
    reading the claims. Most marker words of a store are mid-sentence."""
    before = before.rstrip()
    if before[-1:] == ",":  # "please, never ...", "please (was: x), never ..."
        before = before[:-1].rstrip()
    if not before or before[-1] in _LEAD_DELIMITERS:
        # (a history part before the comma is a space once dropped: "please  , never")
        return True
    return _LAST_LETTERS_RE.search(before).group() in _LEAD_WORDS  # type: ignore[union-attr]


def conflict_severity(data: ConflictData) -> Severity:
    """Warning inside one scope, Information across scopes (SPEC §13)."""
    return "warning" if data["scope"] == data["otherScope"] else "information"


def conflict_finding(
    b: Bullet, other: Bullet, scope: Scope, other_scope: Scope, subject: str, path: str | None
) -> Finding:
    """The ``conflict`` finding on ``b`` (of ``scope``) for its pair with ``other`` (of
    ``other_scope``, in the file ``path``; ``None``: the same file), about ``subject``."""
    # What a message quotes of a note is escaped: a bidi control must not reorder it.
    shown, about = escape_unseen(other.note), escape_unseen(subject)
    if scope == other_scope:
        message = f"Conflicts with the note on line {other.line + 1} about {about}: {shown}"
        where = "The conflicting note"
    else:
        message = (
            f"Conflicts with a {other_scope} note about {about}: {shown} "
            f"(the project note wins in this project)"
        )
        where = f"The conflicting {other_scope} note"
    return Finding(
        "conflict",
        b.line,
        b.start,
        b.line,
        b.end,
        message,
        ConflictData(
            note=b.note,
            other=other.note,
            otherLine=other.line,
            scope=scope,
            otherScope=other_scope,
            subject=subject,
        ),
        (Related(other.line, other.start, other.end, where, path=path),),
    )


def conflict_findings(
    bullets: Sequence[Bullet],
    scope: Scope,
    other_bullets: Sequence[Bullet] = (),
    other_path: str | None = None,
) -> list[Finding]:
    """``conflict`` findings of one store: on both notes of a pair inside it, and, for the
    project store, on its note of a pair with a global note (``other_bullets``, from the
    file ``other_path``). The language server keeps a :class:`ConflictIndex` instead."""
    index = ConflictIndex()
    mine = [b for b in bullets if b.note]  # (not blank)
    theirs = [b for b in other_bullets if b.note] if scope == "project" else []
    # A note without a marker word makes no claim (claims_of_key): one search over all the
    # keys at once finds the few that may, and only they are indexed (as add would).
    marked = _marked(mine)
    for i in marked:
        index.add((scope, i), mine[i].key)
    for i in _marked(theirs):
        index.add(("global", i), theirs[i].key)
    out: list[Finding] = []
    for i in marked:
        if (scope, i) not in index:
            continue  # no claim: no conflict
        b = mine[i]
        for other_ref, subject in index.conflicts_of((scope, i)):
            where, k = cast("tuple[Scope, int]", other_ref)
            same = where == scope
            other = (mine if same else theirs)[k]
            out.append(
                conflict_finding(b, other, scope, where, subject, None if same else other_path)
            )
    # Reading order, then the same scope's note before the other's, by line.
    return sorted(out, key=lambda f: (f.line, f.start, f.related[0].path or "", f.related[0].line))
