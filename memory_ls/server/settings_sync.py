"""The ``memoryLs`` settings, kept in step with the client (SPEC §7 Settings).

The model and its validation are :mod:`memory_ls.server.settings`. Here the
settings are read from ``initializationOptions``, pulled with
``workspace/configuration`` after start-up and on every
``workspace/didChangeConfiguration`` (or taken from that notification, for a
client without pull), and applied: settings that changed rebuild the projects
and recheck every open document. Each problem is reported once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from memory_ls.server import document_sync
from memory_ls.server.protocol import CLIENT_TIMEOUT
from memory_ls.server.settings import SECTION, Settings, parse_settings

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer


def register(ls: MemoryServer) -> None:
    """Settings changes."""
    ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)


def from_initialization_options(ls: MemoryServer, raw: object) -> Settings:
    """The settings in ``initializationOptions``: the layer the client's later settings go over."""
    settings, problems = parse_settings(raw)
    ls.init_settings = settings
    report_problems(ls, problems)
    return settings


async def pull_settings(ls: MemoryServer) -> None:
    """Read ``memoryLs`` from ``workspace/configuration`` (when the client has it)."""
    if not ls.capability("workspace.configuration"):
        return
    try:
        answer = await asyncio.wait_for(
            ls.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)])
            ),
            CLIENT_TIMEOUT,
        )
    except Exception as exc:
        ls.log(f"memory-ls: workspace/configuration failed: {exc!r}", lsp.MessageType.Warning)
        return
    raw = answer[0] if answer else None
    apply_settings(ls, raw)


def apply_settings(ls: MemoryServer, raw: object) -> None:
    """Merge ``raw`` over the initialization options; rebuild projects if anything changed."""
    settings, problems = parse_settings(raw, ls.init_settings)
    report_problems(ls, problems)
    if settings == ls.projects.settings:
        return
    ls.projects.configure(settings)
    document_sync.redescribe(ls)


REPORTED_KEPT = 256
"""How many reported problems are remembered: a client pushing ever new invalid values
would otherwise grow the set for as long as the server runs."""


def report_problems(ls: MemoryServer, problems: list[str]) -> None:
    """Report each settings problem once (once among the last :data:`REPORTED_KEPT`)."""
    reported = ls.reported
    for problem in problems:
        if problem in reported:
            reported[problem] = reported.pop(problem)  # recently seen: forgotten last
            continue
        reported[problem] = None
        if len(reported) > REPORTED_KEPT:
            del reported[next(iter(reported))]
        ls.log(f"memory-ls settings: {problem}", lsp.MessageType.Warning)


async def did_change_configuration(
    ls: MemoryServer, params: lsp.DidChangeConfigurationParams
) -> None:
    """Re-pull ``memoryLs`` (or take pushed settings from clients without pull)."""
    try:
        if ls.capability("workspace.configuration"):
            await pull_settings(ls)
        elif isinstance(params.settings, dict) and SECTION in params.settings:
            apply_settings(ls, params.settings[SECTION])
    except Exception as exc:
        ls.log(f"memory-ls: settings update failed: {exc!r}", lsp.MessageType.Error)
