"""The review inbox on disk: propose, list, accept and reject (SPEC §12).

The inbox files (``memory.inbox.jsonl`` beside each store) are read and
written only through :mod:`memory_ls.store.files`, under *the store's* lock:
the same thread lock and folder ``flock`` as the store, the same refusals
(symlink, size, UTF-8), the same atomic write, and the project's
trust and ``outside-project`` rules. Accepting changes the store and its inbox
in one locked operation, the store first: a crash in between leaves the
proposal waiting, and accepting it again finds the store already reflecting
it, so nothing is lost or applied twice.

Every decision is :mod:`memory_ls.core.inbox`'s; this module only reads,
locks and writes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from memory_ls.core.actions import read_request
from memory_ls.core.bridges import ProposalImportPlan, plan_import, plan_import_proposals
from memory_ls.core.doctor import WITHHELD
from memory_ls.core.inbox import (
    EDIT_NEEDS_ONE_ID,
    MAX_PROPOSALS,
    PROPOSAL_ACTIONS,
    Inbox,
    Outcome,
    Proposed,
    Reviewed,
    already_proposed_message,
    full_message,
    parse_inbox,
    proposed_message,
    rejected_message,
    too_many_ids_message,
    unknown_id_message,
)
from memory_ls.core.inbox import accept as accept_inbox
from memory_ls.core.inbox import propose as propose_inbox
from memory_ls.core.inbox import reject as reject_inbox
from memory_ls.core.models import (
    SCOPES,
    ImportResult,
    InboxCounts,
    InboxResult,
    MemoryResult,
    Proposal,
    ReviewResult,
    Scope,
)
from memory_ls.core.render import result_text
from memory_ls.core.text import MAX_STORE_BYTES, display_path
from memory_ls.store.files import (
    LockedFolder,
    StoreFile,
    StoreRefused,
    oversize_message,
    read_store,
    refuse_change,
    rewrite_store,
    store_lock,
    write_failed_message,
    write_refusal,
    write_store,
)
from memory_ls.store.paths import inbox_path
from memory_ls.store.runtime import MemoryRuntime

PROPOSE_ACTION_MESSAGE = "action must be one of add, update, forget."


def utc_now() -> str:
    """Now, as a proposal's ``at``: ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def malformed_warning(path: Path, line: int) -> str:
    """The warning for an inbox line that is not a valid proposal."""
    return f"{display_path(path)}:{line}: not a valid proposal; kept as it is and ignored"


def write_inbox(path: Path, text: str, folder: LockedFolder) -> None:
    """Write an inbox under the store's lock: atomically, or delete it when ``text`` is empty.

    Deleting is refused where replacing would be (a read-only inbox stays as it is). An
    inbox with other names (hard links) is neither, as a store is not (SPEC §12: the
    store's safe path): the other names would keep the old proposals, and until then a
    proposal made through one name could be accepted through the other.
    """
    if text:
        write_store(path, text, folder, one_name=True)
        return
    refuse_change(path, folder, one_name=True)
    name: str | Path = path.name if folder.fd is not None else path
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder.fd)


class Review:
    """Both inboxes of one project, through its :class:`MemoryRuntime`."""

    def __init__(self, runtime: MemoryRuntime) -> None:
        self.runtime = runtime

    def path(self, scope: Scope) -> Path:
        """The inbox file of ``scope``."""
        return inbox_path(self.runtime.paths[scope])

    # -- reading ------------------------------------------------------------------

    def read(self, scope: Scope) -> tuple[Inbox, StoreFile]:
        """The inbox of ``scope`` as it is now (a refused or unreadable one reads as empty).

        An untrusted project's inbox is read too: it is counted, never shown.
        """
        path = self.path(scope)
        refusal = self.runtime.store_refusal(scope)
        if refusal is not None:
            return Inbox(), StoreFile(path, False, "", None, error=refusal)
        file = read_store(path)
        return parse_inbox(file.content if file.error is None else ""), file

    def counts(self) -> InboxCounts:
        """How many proposals wait in each inbox."""
        return {
            "project": len(self.read("project")[0].proposals),
            "global": len(self.read("global")[0].proposals),
        }

    def shown(self, scope: Scope) -> bool:
        """Whether the text of ``scope``'s proposals may be shown (SPEC §4)."""
        return scope == "global" or self.runtime.trust().trusted

    def listing(self) -> tuple[InboxResult, list[str]]:
        """The ``memory.inbox`` object, and the warnings about the files (bad lines, refusals,
        other names: an inbox with hard links is never replaced or deleted, so every
        propose, accept and reject on it is refused; said before, as the doctor says it).

        An untrusted project's proposals keep their id, action and ``at``;
        their text and ``by`` are withheld.
        """
        out: dict[Scope, list[Proposal]] = {}
        warnings: list[str] = []
        for scope in SCOPES:
            inbox, file = self.read(scope)
            proposals = inbox.proposals
            if not self.shown(scope):
                proposals = [_withheld(p) for p in proposals]
            # Line numbers only: never the text of a line (SPEC §4).
            warnings.extend(malformed_warning(file.path, n) for n in inbox.malformed)
            if file.error:
                warnings.append(file.error)
            elif file.invalid_utf8_at is not None:
                warnings.append(file.mutation_error or "")
            if file.error is None and (refused := write_refusal(file.path)) is not None:
                warnings.append(refused)
            out[scope] = proposals
        return {"project": out["project"], "global": out["global"]}, warnings

    # -- propose ------------------------------------------------------------------

    def propose(
        self, action: object, args: Mapping[str, object], by: str
    ) -> tuple[MemoryResult, str]:
        """Queue an add, update or forget for review: its result and its text (SPEC §12).

        Validated exactly like the action itself (fields, read-only, trust), then
        against the store and the inbox under the store's lock.
        """
        runtime = self.runtime
        request, error = read_request(action, args)
        if action not in PROPOSAL_ACTIONS:  # before its fields: a merge is not "other is required."
            error = PROPOSE_ACTION_MESSAGE
        scope, echoed = request.scope, request.echoed() if error is None else {}
        error = error or runtime.refusal(scope)
        if error:
            result = runtime.result(request.action, scope, error=error, **echoed)
            return result, result_text(result)
        seed = os.urandom(8).hex()
        at = utc_now()

        def planned(store: str, inbox: str) -> tuple[Proposed, str | None]:
            out = propose_inbox(store, inbox, request, by, at, seed)
            return out, out.inbox if out.queued else None

        if not runtime.paths[scope].parent.exists():
            # Nothing to lock yet: a proposal that queues nothing creates no folder.
            dry, _ = planned("", "")
            out = dry if not dry.queued else self._with_inbox(scope, planned)
        else:
            out = self._with_inbox(scope, planned)
        result = runtime.result(
            request.action,
            scope,
            False,
            existing=out.existing,
            error=out.error,
            **echoed,
        )
        if out.proposal is not None:
            result["proposal"] = out.proposal
        if out.error is None and out.existing is None:
            result["waiting"] = out.waiting
        if out.error or out.existing is not None or out.proposal is None:
            return result, result_text(result)
        if out.queued:
            return result, proposed_message(out.proposal, scope, out.waiting)
        return result, already_proposed_message(out.proposal)

    def import_proposals(
        self, candidates: Sequence[str], scope: Scope, by: str
    ) -> tuple[ImportResult, ProposalImportPlan | None]:
        """``import --propose`` (SPEC §15 with §12): one inbox write holding one ``add``
        proposal per note the import would add; the store is not written.

        Refused whole, nothing queued, when the scope refuses a change (untrusted,
        read-only), when the store or inbox cannot be read, or when the inbox would
        pass its 200 proposals or the size cap. The plan is ``None`` when the
        import was refused before it was planned.
        """
        runtime = self.runtime
        refusal = runtime.refusal(scope)
        if refusal:
            return plan_import("", candidates).refused_whole(refusal), None
        seed, at = os.urandom(8).hex(), utc_now()
        plans: list[ProposalImportPlan] = []

        def planned(store: str, inbox: str) -> tuple[Proposed, str | None]:
            plan = plan_import_proposals(store, inbox, candidates, by, at, seed)
            plans.append(plan)
            error = None
            if plan.full:
                error = full_message(scope)
            elif plan.changed and plan.size > MAX_STORE_BYTES:
                error = oversize_message(self.path(scope), plan.size)
            write = plan.inbox if error is None and plan.changed else None
            return Proposed(inbox, False, error=error), write

        out: Proposed | None = None
        if not runtime.paths[scope].parent.exists():
            # Nothing to lock yet: an import that queues nothing creates no folder.
            dry, write = planned("", "")
            if write is None:
                out = dry
        if out is None:
            out = self._with_inbox(scope, planned)
        plan = plans[-1] if plans else plan_import_proposals("", "", candidates, by, at, seed)
        if out.error:
            return plan.refused_whole(out.error), plan
        return plan.result(), plan

    def _with_inbox(
        self, scope: Scope, plan: Callable[[str, str], tuple[Proposed, str | None]]
    ) -> Proposed:
        """Under the store's lock, read the store and the inbox, ask ``plan`` (given their
        texts) what to answer and what the inbox becomes (``None``: no write), and write it.

        The one locked read-plan-write of proposing and of ``import --propose``. A store
        or inbox that cannot be changed (symlink, invalid UTF-8, too large) refuses it
        before ``plan`` is asked: the answer is that refusal, nothing queued and no count
        (a refused proposal reports no ``waiting``). An I/O failure is a refusal too.
        """

        def locked() -> Proposed:
            with self._locked(scope) as folder:
                store = read_store(self.runtime.paths[scope], folder)
                inbox = read_store(self.path(scope), folder)
                refused = store.mutation_error or inbox.mutation_error
                if refused:
                    return Proposed(inbox.content, False, error=refused)
                out, write = plan(store.content, inbox.content)
                if write is not None:
                    write_inbox(self.path(scope), write, folder)
                return out

        return self._guarded(scope, locked)

    def _guarded(self, scope: Scope, run: Callable[[], Proposed]) -> Proposed:
        """Run a locked operation; an I/O failure is a refusal, not a crash."""
        try:
            return run()
        except StoreRefused as exc:
            return Proposed("", False, error=str(exc))
        except OSError as exc:
            return Proposed("", False, error=self._io_error(scope, exc))

    def _io_error(self, scope: Scope, exc: OSError) -> str:
        return write_failed_message(self.path(scope), exc)

    @contextlib.contextmanager
    def _locked(self, scope: Scope) -> Iterator[LockedFolder]:
        """The store's own lock (thread and folder), with the project's folder checked once held."""
        runtime = self.runtime
        refused = runtime.refusal(scope)
        if refused is not None:
            raise StoreRefused(refused)
        # Not the runtime's own lock while waiting: a reader of this runtime (a hover in
        # the language server) is never kept waiting for another process's write.
        with store_lock(
            runtime.paths[scope],
            make_parents=scope == "global",
            check=lambda real: runtime.store_refusal(scope, real),
        ) as folder:
            yield folder

    # -- accept and reject -------------------------------------------------------

    def accept(
        self,
        ids: Sequence[str] | None,
        scope: Scope | None = None,
        text: str | None = None,
        to: str | None = None,
    ) -> ReviewResult:
        """Accept proposals: the given ids (looked up in both inboxes unless ``scope``), or all."""
        return self._review("accept", ids, scope, text, to)

    def reject(self, ids: Sequence[str] | None, scope: Scope | None = None) -> ReviewResult:
        """Reject proposals: the given ids (looked up in both inboxes unless ``scope``), or all."""
        return self._review("reject", ids, scope, None, None)

    def _review(
        self,
        verb: str,
        ids: Sequence[str] | None,
        scope: Scope | None,
        text: str | None,
        to: str | None,
    ) -> ReviewResult:
        scopes: tuple[Scope, ...] = (scope,) if scope is not None else SCOPES
        refusal: str | None = None
        if (text is not None or to is not None) and (ids is None or len(set(ids)) != 1):
            refusal = EDIT_NEEDS_ONE_ID
        elif ids is not None and len(set(ids)) > len(scopes) * MAX_PROPOSALS:
            # More than can wait: one refusal, not one result (with every note) per id.
            refusal = too_many_ids_message(len(set(ids)), len(scopes))
        if refusal is not None:
            refused = self.runtime.result(verb, scope or "project", error=refusal)
            return {
                "action": "accept" if verb == "accept" else "reject",
                "changed": False,
                "results": [refused],
                "waiting": self.counts(),
                "text": result_text(refused),
                "error": refusal,
            }
        # Which inbox holds each id (read unlocked; re-checked under the lock).
        plan: dict[Scope, list[str] | None] = {}
        results: list[MemoryResult] = []
        if ids is None:
            plan = dict.fromkeys(scopes)
        else:
            unique = list(dict.fromkeys(ids))
            waiting = {s: {p["id"] for p in self.read(s)[0].proposals} for s in scopes}
            found: dict[Scope, list[str]] = {}
            for pid in unique:
                home = next((s for s in scopes if pid in waiting[s]), None)
                if home is None:
                    error = unknown_id_message(pid, scope)
                    results.append(self.runtime.result(verb, scope or "project", error=error))
                else:
                    found.setdefault(home, []).append(pid)
            plan = dict(found.items())
        texts: list[str] = [result_text(r) for r in results]
        changed = False
        for s, chosen in plan.items():
            inbox, file = self.read(s)
            if chosen is None and not inbox.proposals and file.error is None:
                continue  # "all" of an empty inbox: nothing to refuse or report
            # A refused inbox (a symlink, a FIFO, over the cap) is said, not read as empty.
            outcome_results, outcome_texts, did = self._review_scope(verb, s, chosen, text, to)
            results.extend(outcome_results)
            texts.extend(outcome_texts)
            changed = changed or did
        errors = [r["error"] for r in results if "error" in r]
        out: ReviewResult = {
            "action": "accept" if verb == "accept" else "reject",
            "changed": changed,
            "results": results,
            "waiting": self.counts(),
            "text": "\n".join(texts) if texts else "No proposals waiting.",
        }
        if errors:
            out["error"] = "; ".join(errors)
        return out

    def _review_scope(
        self,
        verb: str,
        scope: Scope,
        ids: list[str] | None,
        text: str | None,
        to: str | None,
    ) -> tuple[list[MemoryResult], list[str], bool]:
        """Accept or reject in one inbox, in one locked operation."""
        runtime = self.runtime
        store_path, path = runtime.paths[scope], self.path(scope)

        def refused(message: str) -> tuple[list[MemoryResult], list[str], bool]:
            result = runtime.result(verb, scope, error=message)
            return [result], [result_text(result)], False

        refusal = runtime.refusal(scope)
        if refusal is not None:
            return refused(refusal)
        written_store: StoreFile | None = None
        try:
            with self._locked(scope) as folder:
                inbox = read_store(path, folder)
                if inbox.mutation_error:
                    return refused(inbox.mutation_error)
                review: Reviewed
                if verb == "accept":
                    made: list[Reviewed] = []

                    def decide(file: StoreFile) -> str | None:
                        # Asked again when a program that takes no lock (an editor) saved the
                        # store meanwhile: its save is kept, as for an action called directly.
                        if file.mutation_error:
                            raise StoreRefused(file.mutation_error)
                        made.append(accept_inbox(file.content, inbox.content, scope, ids, text, to))
                        if not made[-1].store_changed:
                            return None
                        if made[-1].inbox_changed:
                            # Before the store: an inbox that cannot be changed (read-only)
                            # refuses the accept whole, not after the store took the change.
                            refuse_change(path, folder, one_name=True)
                        return made[-1].store

                    written_store = rewrite_store(store_path, folder, decide)
                    review = made[-1]
                else:
                    store = read_store(store_path, folder)
                    review = reject_inbox(store.content, inbox.content, scope, ids)
                if review.inbox_changed:
                    write_inbox(path, review.inbox, folder)
        except StoreRefused as exc:
            return refused(str(exc))
        except OSError as exc:
            return refused(self._io_error(scope, exc))
        if written_store is not None:
            with runtime._lock:
                runtime._adopt(scope, written_store)
        results: list[MemoryResult] = []
        texts: list[str] = []
        for outcome in review.outcomes:
            result = self._outcome_result(verb, scope, outcome, review.waiting)
            results.append(result)
            if verb == "reject" and outcome.proposal is not None and outcome.error is None:
                texts.append(rejected_message(outcome.proposal, scope))
            else:
                texts.append(result_text(result))
        return results, texts, review.store_changed or review.inbox_changed

    def _outcome_result(
        self, verb: str, scope: Scope, outcome: Outcome, waiting: int
    ) -> MemoryResult:
        runtime = self.runtime
        if outcome.error is not None or outcome.proposal is None:
            result = runtime.result(verb, scope, error=outcome.error)
        elif outcome.request is None or outcome.change is None:
            result = runtime.result(verb, scope)
        else:
            request, change = outcome.request, outcome.change
            extra = request.echoed()
            if change.error:
                result = runtime.result(request.action, scope, error=change.error, **extra)
            else:
                result = runtime.result(
                    request.action, scope, change.changed, existing=change.existing, **extra
                )
        if outcome.proposal is not None:
            result["proposal"] = outcome.proposal
        result["waiting"] = waiting
        return result


def _withheld(proposal: Proposal) -> Proposal:
    """A proposal of an untrusted project: its id, action and time; its text and ``by`` withheld.

    ``by`` is text from the project's own file like the note itself (a cloned
    repository can ship an inbox), so it is withheld too (SPEC §4).
    """
    out = dict(proposal)
    out["text"] = WITHHELD
    out["by"] = WITHHELD
    if "to" in out:
        out["to"] = WITHHELD
    return out  # type: ignore[return-value]
