"""The shapes that cross a boundary (CLI ``--json``, LSP commands, MCP).

They are ``TypedDict``s rather than pydantic models so that the read-only CLI
verbs start fast (pydantic's import and model build cost ~200 ms);
:mod:`memory_ls.schemas` turns them into published JSON Schemas with pydantic.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

Scope = Literal["project", "global"]
SCOPES: tuple[Scope, Scope] = ("project", "global")
ACTIONS = ("add", "update", "forget", "list", "merge", "move", "clear")


def other_scope(scope: Scope) -> Scope:
    """The scope that is not ``scope``."""
    return "global" if scope == "project" else "project"


# Functional form: ``global`` is a Python keyword.
MemoryResult = TypedDict(
    "MemoryResult",
    {
        "action": str,
        "scope": Scope,
        "project": list[str],
        "global": list[str],
        "changed": bool,
        "entry": NotRequired[str],
        "to": NotRequired[str],
        "existing": NotRequired[str],
        "error": NotRequired[str],
    },
)
MemoryResult.__doc__ = (
    "The result of every memory action: the notes of both scopes after it, whether "
    "the store changed, and the error that refused it, if any."
)


class OmittedNote(TypedDict):
    """A note the recall plan leaves out."""

    scope: Scope
    text: str


class InjectResult(TypedDict):
    """The ``memory.inject`` object: the recall body and its budget."""

    body: str | None
    bytes: int
    maxInjectBytes: int
    included: int
    omitted: list[OmittedNote]
    inject: bool


PathInfo = TypedDict(
    "PathInfo",
    {"project": str, "global": str, "trusted": bool, "trustReason": str},
)
PathInfo.__doc__ = "The ``memory.path`` object: both store paths and the trust decision."
