"""Whether a project is trusted, and which rule said so (SPEC §4).

Pure: the store layer gathers the facts (the explicit flag, the text of
``trust.json``, which resources exist) and these functions decide. Every
decision names its rule and carries a sentence a human can read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence

from memory_ls.core.config import json_type_name, parse_json
from memory_ls.core.records import field, record, replace
from memory_ls.core.text import display_path

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from memory_ls.core.models import TrustRule

PROJECT_TRUST_RESOURCES: tuple[str, ...] = (
    ".pi/settings.json",
    ".pi/mcp.json",
    ".pi/extensions",
    ".pi/skills",
    ".pi/prompts",
    ".pi/themes",
    ".pi/SYSTEM.md",
    ".pi/APPEND_SYSTEM.md",
)
"""Pi's trust-requiring resources, relative to the project root."""

ANCESTOR_TRUST_RESOURCE = ".agents/skills"
"""Trust-requiring in the root or any ancestor, except the one in the home directory."""


@record
class TrustDecision:
    """A trust verdict, the rule that reached it, and why."""

    trusted: bool
    rule: TrustRule
    reason: str
    """A sentence naming the rule's evidence, e.g. ``untrusted: the project holds .pi/mcp.json``."""
    problems: list[str] = field(default_factory=list)
    """Things found on the way that a human should fix (e.g. a malformed ``trust.json``)."""
    consulted: tuple[str, ...] = field(default=(), compare=False)
    """Every path the decision read or looked for: when none of them changed, nor the
    folders they would appear in, the decision still holds (a cache keys on them)."""

    @property
    def summary(self) -> str:
        """The verdict and its rule, as every trust report says it (:func:`trust_summary`)."""
        return trust_summary(self.trusted, self.rule, self.reason)


def trust_summary(trusted: bool, rule: str, reason: str) -> str:
    """The trust verdict said once: ``untrusted (rule: resources; the project holds …)``.

    A decision's ``reason`` starts with the verdict itself (``untrusted: …``); that
    prefix is dropped here so a report does not say it twice.
    """
    verdict = "trusted" if trusted else "untrusted"
    evidence = reason.removeprefix(f"{verdict}: ")
    return f"{verdict} (rule: {rule}; {evidence})" if evidence else f"{verdict} (rule: {rule})"


@record
class TrustStoreMatch:
    """The ``trust.json`` entry that decides for a project root."""

    directory: str
    """The entry's directory: the root itself or its nearest decided ancestor."""
    trusted: bool


def explicit_decision(trusted: bool, source: str = "the client or command line") -> TrustDecision:
    """Rule 1: the client (workspace trust) or the CLI (``--trusted``/``--untrusted``) decided."""
    verdict = "trusted" if trusted else "untrusted"
    return TrustDecision(
        trusted=trusted, rule="explicit", reason=f"{verdict}: set explicitly by {source}"
    )


def parse_trust_store(text: str, source: str) -> tuple[dict[str, bool | None], list[str]]:
    """Parse and validate the text of ``trust.json`` (``source`` names it in problems).

    Malformed JSON or a top level that is not an object gives no entries and
    one problem. See ``trust_entries`` for the checks on each entry.
    """
    data, error = parse_json(text)
    if error is not None:
        return {}, [f"ignored {display_path(source)}: {error}"]
    return trust_entries(data, source)


def trust_entries(data: object, source: str) -> tuple[dict[str, bool | None], list[str]]:
    """Validate parsed ``trust.json`` data into ``{canonical dir: True/False/None}``.

    The file must be an object mapping absolute paths to ``true``, ``false``
    or ``null``; otherwise the whole file counts as no decision and one
    problem is reported. A single entry with another value, or a key that is
    not an absolute path, is skipped and reported. Keys are normalised
    (``/a/b/`` is ``/a/b``); when two spellings of one directory disagree,
    ``false`` wins, as the safe choice.
    """
    if not isinstance(data, dict):
        shown = display_path(source)
        return {}, [f"ignored {shown}: expected a JSON object, found {json_type_name(data)}"]
    entries: dict[str, bool | None] = {}
    problems: list[str] = []
    for key, value in data.items():
        if value is not None and not isinstance(value, bool):
            problems.append(
                f"ignored entry {key!r} in {display_path(source)}: expected true, false or null, "
                f"found {json_type_name(value)}"
            )
            continue
        if not posixpath.isabs(key):
            problems.append(
                f"ignored entry {key!r} in {display_path(source)}: not an absolute path"
            )
            continue
        directory = _normalise_dir(key)
        if directory in entries and entries[directory] is not None and value is not False:
            continue  # keep an earlier decision over a later null, and false over true
        entries[directory] = value
    return entries, problems


def nearest_trust_entry(
    entries: Mapping[str, bool | None], project_root: str
) -> TrustStoreMatch | None:
    """Rule 2's lookup: the decision for ``project_root`` or its nearest decided ancestor.

    ``project_root`` must already be canonical (symlinks resolved). A
    ``null`` entry means "no decision here", so the walk goes on upwards.
    """
    directory = _normalise_dir(project_root)
    while True:
        value = entries.get(directory)
        if value is not None:
            return TrustStoreMatch(directory=directory, trusted=value)
        parent = posixpath.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def trust_store_decision(
    entries: Mapping[str, bool | None], project_root: str, source: str
) -> TrustDecision | None:
    """Rule 2: the decision ``trust.json`` (named ``source``) gives, or ``None``."""
    match = nearest_trust_entry(entries, project_root)
    if match is None:
        return None
    verdict = "trusted" if match.trusted else "untrusted"
    where = display_path(match.directory)
    if match.directory != _normalise_dir(project_root):
        where = f"{where} (an ancestor of the project)"
    return TrustDecision(
        trusted=match.trusted,
        rule="trust.json",
        reason=f"{verdict}: {display_path(source)} marks {where} as {verdict}",
    )


def resources_decision(
    in_project: Sequence[str], in_ancestors: Sequence[str] = ()
) -> TrustDecision:
    """Rule 3: untrusted if any trust-requiring resource was found, trusted if not.

    ``in_project`` lists resources relative to the root (``.pi/mcp.json``);
    ``in_ancestors`` lists ancestor ``.agents/skills`` folders as absolute paths.
    """
    if not in_project and not in_ancestors:
        return TrustDecision(
            trusted=True,
            rule="resources",
            reason="trusted: no trust-requiring resources in the project",
        )
    parts: list[str] = []
    if in_project:
        parts.append(f"the project holds {_join(in_project)}")
    if in_ancestors:
        parts.append(f"a parent folder holds {_join([display_path(p) for p in in_ancestors])}")
    return TrustDecision(trusted=False, rule="resources", reason="untrusted: " + "; ".join(parts))


def with_problems(decision: TrustDecision, problems: Iterable[str]) -> TrustDecision:
    """Return ``decision`` carrying ``problems`` too (they outlive the rule that found them)."""
    extra = list(problems)
    if not extra:
        return decision
    return replace(decision, problems=[*decision.problems, *extra])


# -- helpers -------------------------------------------------------------------


def _normalise_dir(path: str) -> str:
    # normpath keeps a leading "//" (POSIX allows it to mean something else);
    # trust.json keys never use it, so fold it like any other slash run.
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def _join(items: Sequence[str]) -> str:
    return ", ".join(items)
