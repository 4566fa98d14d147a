"""Human- and model-facing text for results, as Pi's memory tool writes it (SPEC §11)."""

from __future__ import annotations

from memory_ls.core.text import escape_unseen
from memory_ls.core.trust import trust_summary as trust_summary  # every report's one rendering

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:  # types only: `list` prints without the boundary shapes
    from memory_ls.core.models import MemoryResult, SyncResult


def count_line(result: MemoryResult) -> str:
    """``Now <P> project, <G> global.``"""
    return f"Now {len(result['project'])} project, {len(result['global'])} global."


def _list_lines(label: str, notes: list[str]) -> list[str]:
    if not notes:
        return [f"{label}: none"]
    return [f"{label} ({len(notes)}):", *(f"- {escape_unseen(n)}" for n in notes)]


def result_text(result: MemoryResult) -> str:
    """The text for a result: ``Added to …``, ``Error: …``, the list, and so on.

    A person reads it (a terminal, an agent's tool panel): each note is quoted with
    :func:`~memory_ls.core.text.escape_unseen`, so a bidi override or a zero-width
    character cannot reorder or hide what it says. The result's data keeps the notes
    as they are (``--json``, MCP ``structuredContent``), and so does recall.
    """
    if "error" in result:
        return f"Error: {result['error']}"
    scope, action = result["scope"], result["action"]
    entry = escape_unseen(result.get("entry", ""))
    if action == "list":
        p, g = len(result["project"]), len(result["global"])
        return "\n".join(
            [
                f"Memory ({p} project, {g} global).",
                *_list_lines("project", result["project"]),
                *_list_lines("global", result["global"]),
            ]
        )
    if action == "add":
        if not result["changed"]:
            return f"Already in {scope} memory: {escape_unseen(result.get('existing', entry))}"
        return f"Added to {scope} memory: {entry}\n{count_line(result)}"
    if action == "update":
        return (
            f"Updated {scope} memory: {escape_unseen(result.get('to', ''))}\n{count_line(result)}"
        )
    if action == "forget":
        return f"Removed from {scope} memory: {entry}\n{count_line(result)}"
    if action == "merge":
        return f"Merged into {scope} memory: {escape_unseen(result.get('to', ''))}\n{count_line(result)}"
    if action == "move":
        target = "global" if scope == "project" else "project"
        if "existing" in result:
            shown = escape_unseen(result["existing"])
            head = f"Already in {target} memory: {shown}; removed from {scope} memory."
        else:
            head = f"Moved from {scope} to {target} memory: {entry}"
        return f"{head}\n{count_line(result)}"
    if action == "clear":
        if not result["changed"]:
            return f"{scope.capitalize()} memory has no notes to clear."
        return f"Cleared {scope} memory.\n{count_line(result)}"
    return count_line(result)


def _count(n: int, one: str) -> str:
    return f"{n} {one}" if n == 1 else f"{n} {one}s"


def sync_summary(result: SyncResult) -> str:
    """One line for a notification: ``Synced global memory with origin/main: 2 notes arrived, 1 left.``"""
    if "error" in result:
        return f"Error: {result['error']}"
    arrived, left = len(result["arrived"]), len(result["left"])
    return (
        f"Synced {result['scope']} memory with {result['upstream']}: "
        f"{_count(arrived, 'note')} arrived, {left} left."
    )


def sync_text(result: SyncResult) -> str:
    """What ``memory-ls sync`` prints: what it set up and committed, the notes that moved."""
    lines = [*result["setup"]]
    if "commit" in result:
        lines.append(f"Committed: {result['commit']}")
    lines += [f"+ {escape_unseen(n)}" for n in result["arrived"]]
    lines += [f"- {escape_unseen(n)}" for n in result["left"]]
    if "error" in result:
        lines.append(f"Error: {result['error']}")
    else:
        lines.append(sync_summary(result))
    return "\n".join(lines)
