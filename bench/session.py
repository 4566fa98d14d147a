"""One benchmark session: start a server, open the store, type, add notes, shut down.

What is measured (all wall-clock, ``time.perf_counter``, on the client side):

- **cold start**: spawn → ``initialize`` response (of the bare server, for a server that
  runs behind a proxy: vscode-markdown's proxy adds a Node start-up of its own);
- **open → diagnostics**: ``didOpen`` written → the first ``publishDiagnostics`` for the
  document (push), or the ``textDocument/diagnostic`` report (pull, requested right after
  ``didOpen``);
- **similar** (memory-ls): ``didOpen`` → the first publish that holds a ``similar`` hint;
- **checks** (memory-ls): ``didOpen`` → the first publish that holds a finding of SPEC §13's
  project checks (``stale-path``, ``stale-script``, ``instruction-duplicate``): the look at
  the project in the server's background thread, then its publish;
- **edits**: single characters typed at the end of a note in the middle of the file, one
  every ``gap`` seconds (an editor's typing pace, so the server sees idle time as it does in
  use); each waits for the diagnostics of its own version (push: the publish carrying that
  version; pull: the report requested right after the change);
- **memory.add** (memory-ls): ``workspace/executeCommand`` round trips with new notes, after
  the document is closed (an agent adds without the file open in an editor);
- **peak RSS** of the server process tree, sampled from ``/proc`` all session long.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.lspclient import LspClient, Publish, RssSampler, ServerError
from bench.servers import ServerSpec
from bench.workload import CHECKS_OFF, Workspace

TYPED = " and keep the staging database warm before each deploy, ok"
PROJECT_CHECKS = frozenset({"stale-path", "stale-script", "instruction-duplicate"})
"""The codes of SPEC §13's checks that look at the project around the store."""
SECTION_13_CODES = PROJECT_CHECKS | {"conflict"}
"""Every code of SPEC §13."""


@dataclass
class SessionParams:
    edits: int = 50
    adds: int = 20
    gap: float = 0.05
    similar_timeout: float = 5.0
    checks_timeout: float = 10.0
    reply_timeout: float = 30.0


@dataclass
class SessionResult:
    server: str
    store: str
    session: int
    cold_start: float | None = None
    cold_start_via_proxy: float | None = None
    open_diagnostics: float | None = None
    open_diagnostic_count: int | None = None
    similar: float | None = None
    similar_count: int | None = None
    """``similar`` hints in the first publish that held any."""
    checks: float | None = None
    checks_count: int | None = None
    """SPEC §13 project findings in the first publish that held any."""
    edits: list[float] = field(default_factory=list)
    edit_counts: list[int] = field(default_factory=list)
    """Diagnostics in the publish (or report) each timed edit waited for."""
    edit_parses: list[float] = field(default_factory=list)
    """Seconds the client took to parse each timed edit's publish (push only)."""
    edit_sizes: list[int] = field(default_factory=list)
    """Bytes of each timed edit's publish (push only)."""
    edit_timeouts: int = 0
    unpublished_edits: int = 0
    last_edit_diagnostic_count: int | None = None
    adds: list[float] = field(default_factory=list)
    add_errors: list[str] = field(default_factory=list)
    peak_rss: int | None = None
    sync: str = ""
    mode: str = ""
    server_info: str = ""
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def client_capabilities(pull: bool) -> dict[str, Any]:
    text_document: dict[str, Any] = {
        "synchronization": {"dynamicRegistration": False, "didSave": True},
        "publishDiagnostics": {
            "relatedInformation": True,
            "versionSupport": True,
            "codeDescriptionSupport": True,
            "dataSupport": True,
            "tagSupport": {"valueSet": [1, 2]},
        },
        "codeAction": {"dynamicRegistration": False},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
    }
    workspace: dict[str, Any] = {
        "applyEdit": True,
        "configuration": True,
        "workspaceFolders": True,
        "didChangeConfiguration": {"dynamicRegistration": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "executeCommand": {"dynamicRegistration": False},
        "workspaceEdit": {"documentChanges": True},
    }
    if pull:
        text_document["diagnostic"] = {
            "dynamicRegistration": False,
            "relatedDocumentSupport": False,
        }
        workspace["diagnostics"] = {"refreshSupport": True}
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "textDocument": text_document,
        "workspace": workspace,
        "window": {"workDoneProgress": True, "showMessage": {}},
    }


def _sync_kind(capabilities: dict[str, Any]) -> int:
    sync = capabilities.get("textDocumentSync", 0)
    if isinstance(sync, dict):
        return int(sync.get("change", 0) or 0)
    return int(sync or 0)


def _typing_target(text: str) -> tuple[int, int]:
    """(line, column) at the end of the bullet nearest the middle of the file."""
    lines = text.split("\n")
    middle = len(lines) // 2
    for distance in range(len(lines)):
        for line in (middle - distance, middle + distance):
            if 0 <= line < len(lines) and lines[line].startswith("- "):
                return line, len(lines[line])
    return len(lines) - 1, len(lines[-1])


def _for_version(uri: str, version: int) -> Any:
    def predicate(publish: Publish) -> bool:
        return publish.uri == uri and (publish.version is None or publish.version == version)

    return predicate


async def run_session(
    spec: ServerSpec, store: str, number: int, ws: Workspace, params: SessionParams
) -> SessionResult:
    result = SessionResult(server=spec.name, store=store, session=number, mode=spec.mode)
    env = ws.env(dict(os.environ))
    bare_start = None
    if spec.cold_start_argv:
        try:
            bare_start = await cold_start(spec, spec.cold_start_argv, env, ws, params.reply_timeout)
        except (ServerError, OSError) as exc:
            result.error = f"cold start of the bare server: {exc}"[:400]
    client = await LspClient.spawn(
        spec.argv, env=env, cwd=ws.root, configuration=spec.configuration
    )
    sampler = RssSampler(client.proc.pid, exclude_root=spec.rss_exclude_root).start()
    try:
        await _drive(client, spec, ws, params, result)
    except Exception as exc:  # a broken server must not stop the benchmark
        result.error = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        result.peak_rss = sampler.stop() or None
        await client.shutdown()
    if bare_start is not None:
        result.cold_start_via_proxy, result.cold_start = result.cold_start, bare_start
    return result


def _empty_project(ws: Workspace) -> bool:
    """Whether the workspace holds nothing but the repository marker and the store."""
    return all(p.name in {".git", ".pi"} for p in ws.root.iterdir())


def _initialize_params(spec: ServerSpec, ws: Workspace, store: str = "") -> dict[str, Any]:
    options = spec.init_options
    if spec.is_memory_ls and store in CHECKS_OFF:
        # The tree scenario without SPEC §13's checks: what issue 13's speed criterion
        # compares the scenario with.
        off = dict.fromkeys(sorted(SECTION_13_CODES), "off")
        return {
            **_initialize_params(spec, ws),
            "initializationOptions": {**(options or {}), "severity": off},
        }
    if spec.is_memory_ls and store and _empty_project(ws):
        # A store benchmarked alone sits in an empty project, where every path a note
        # mentions is "stale": the checks that look at the project are measured in the
        # tree stores instead, so these figures stay those of the store itself (issue 11).
        options = {**(options or {}), "severity": dict.fromkeys(sorted(PROJECT_CHECKS), "off")}
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "memory-ls-bench", "version": "1"},
        "rootUri": ws.root_uri,
        "rootPath": str(ws.root),
        "workspaceFolders": [{"uri": ws.root_uri, "name": ws.root.name}],
        "initializationOptions": options,
        "capabilities": client_capabilities(spec.mode == "pull"),
    }


async def cold_start(
    spec: ServerSpec, argv: list[str], env: dict[str, str], ws: Workspace, timeout: float
) -> float:
    """Spawn → ``initialize`` response of ``argv``, then shut it down."""
    client = await LspClient.spawn(argv, env=env, cwd=ws.root, configuration=spec.configuration)
    try:
        await client.request("initialize", _initialize_params(spec, ws), timeout=timeout)
        return time.perf_counter() - client.spawned
    finally:
        await client.shutdown()


async def _drive(
    client: LspClient, spec: ServerSpec, ws: Workspace, params: SessionParams, result: SessionResult
) -> None:
    timeout = params.reply_timeout
    init = await client.request(
        "initialize", _initialize_params(spec, ws, result.store), timeout=timeout
    )
    result.cold_start = time.perf_counter() - client.spawned
    capabilities = (init or {}).get("capabilities", {})
    info = (init or {}).get("serverInfo") or {}
    result.server_info = " ".join(str(v) for v in (info.get("name"), info.get("version")) if v)
    incremental = _sync_kind(capabilities) == 2
    result.sync = "incremental" if incremental else "full"
    await client.notify("initialized", {})
    if spec.settings is not None:
        await client.notify("workspace/didChangeConfiguration", {"settings": spec.settings})

    uri = ws.store_uri
    text = ws.store_path.read_text(encoding="utf-8")
    pull = spec.mode == "pull"

    # open -> first diagnostics
    similar_waiter = client.expect_publish(
        lambda p: p.uri == uri and any(d.get("code") == "similar" for d in p.diagnostics)
    )
    checks_waiter = client.expect_publish(
        lambda p: p.uri == uri and any(d.get("code") in PROJECT_CHECKS for d in p.diagnostics)
    )
    first = client.expect_publish(_for_version(uri, 0))
    opened = await client.open(uri, text)
    if pull:
        report, _ = await client.timed_request(
            "textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout
        )
        result.open_diagnostics = time.perf_counter() - opened
        result.open_diagnostic_count = len((report or {}).get("items") or [])
        first.cancel()
    else:
        publish = await asyncio.wait_for(first, timeout)
        result.open_diagnostics = publish.received - opened
        result.open_diagnostic_count = len(publish.diagnostics)

    if spec.is_memory_ls:
        try:
            found = await asyncio.wait_for(similar_waiter, params.similar_timeout)
            result.similar = found.received - opened
            result.similar_count = sum(1 for d in found.diagnostics if d.get("code") == "similar")
        except TimeoutError:
            result.similar = None
        try:
            if result.store in CHECKS_OFF:
                raise TimeoutError  # its §13 findings are off: none will come
            found = await asyncio.wait_for(checks_waiter, params.checks_timeout)
            result.checks = found.received - opened
            result.checks_count = sum(
                1 for d in found.diagnostics if d.get("code") in PROJECT_CHECKS
            )
        except TimeoutError:
            result.checks = None
    similar_waiter.cancel()
    checks_waiter.cancel()

    # typing
    await asyncio.sleep(0.2)
    line, column = _typing_target(text)
    waited = 0.0  # time already spent in the previous edit's publish grace
    count: int | None
    for i in range(params.edits):
        if params.gap > waited:
            await asyncio.sleep(params.gap - waited)
        waited = 0.0
        char = TYPED[i % len(TYPED)]
        version = client.documents[uri].version + 1
        waiter = None if pull else client.expect_publish(_for_version(uri, version))
        _, sent = await client.insert(uri, line, column + i, char, incremental)
        try:
            if pull:
                report, _ = await client.timed_request(
                    "textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout
                )
                elapsed = time.perf_counter() - sent
                count = len((report or {}).get("items") or [])
            else:
                assert waiter is not None
                answered = await client.barrier(timeout)
                grace_started = time.perf_counter()
                try:
                    # A late publish still counts: wait for it as long as the typing pause.
                    publish = await asyncio.wait_for(waiter, max(params.gap, 0.001))
                    elapsed = publish.received - sent
                    count = len(publish.diagnostics)
                    result.edit_parses.append(publish.parse)
                    result.edit_sizes.append(publish.size)
                except TimeoutError:
                    # No publish for this version (diagnostics unchanged): the server was
                    # done with the change when it answered the barrier.
                    waiter.cancel()
                    elapsed = answered - sent
                    count = result.last_edit_diagnostic_count
                    result.unpublished_edits += 1
                waited = time.perf_counter() - grace_started
        except (TimeoutError, ServerError):
            result.edit_timeouts += 1
            if result.edit_timeouts > 3:
                raise
            continue
        result.edits.append(elapsed)
        if count is not None:
            result.edit_counts.append(count)
        result.last_edit_diagnostic_count = count

    # memory.add round trips (memory-ls only), with the store closed in the editor
    if spec.is_memory_ls and params.adds:
        await client.close_document(uri)
        await asyncio.sleep(0.2)
        for i in range(params.adds):
            argument = {
                "text": f"Bench note {result.session}-{i}: rotate the {TYPED.split()[i % 9]} key",
                "scope": "project",
                "uri": ws.root_uri,
            }
            answer, elapsed = await client.timed_request(
                "workspace/executeCommand",
                {"command": "memory.add", "arguments": [argument]},
                timeout,
            )
            if isinstance(answer, dict) and answer.get("error"):
                result.add_errors.append(str(answer["error"])[:200])
            result.adds.append(elapsed)


def quantile(values: list[float], q: float) -> float | None:
    """Nearest-rank quantile (q in 0..1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered))))
    return ordered[rank - 1]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
