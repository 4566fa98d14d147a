"""The two scopes of memory (SPEC §1): their name, both of them, and the other one.

Apart from :mod:`memory_ls.core.models` (which re-exports them for the boundary
shapes) so that what checks a store can name a scope at run time without loading the
models and ``typing_extensions``: the ``data`` shapes of findings say ``scope: Scope``,
and :mod:`memory_ls.core.fixes` reads those shapes' hints when a client sends a
diagnostic back.
"""

from __future__ import annotations

from typing import Literal

Scope = Literal["project", "global"]
SCOPES: tuple[Scope, Scope] = ("project", "global")


def other_scope(scope: Scope) -> Scope:
    """The scope that is not ``scope``."""
    return "global" if scope == "project" else "project"
