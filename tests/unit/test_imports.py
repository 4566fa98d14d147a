"""What each entry point imports: the language server and the read verbs pay only for
what they use (issue 11: start-up time and memory).

Each check runs in a fresh interpreter and reads ``sys.modules`` at the end, after
the work is done (a lazy import counts too).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import Workspace

HEAVY = ["mcp", "numpy", "memory_ls.mcp_server", "memory_ls.schemas"]
NEVER_IN_SERVE = [*HEAVY, "memory_ls.cli", "pydantic", "pydantic_core"]
"""The MCP SDK, numpy, the schema machinery, pydantic and the CLI have no use in ``serve``
(pydantic judges a settings value only when it is not of the type the schema asks for)."""
NEVER_IN_READ_VERBS = [*HEAVY, "pygls", "lsprotocol", "pydantic", "rapidfuzz", "cattrs"]
"""``inject`` and ``list`` print notes: no protocol, no validation models, no fuzzy scores."""
READ_VERBS_SKIP = [
    "memory_ls.core.actions",
    "memory_ls.core.bridges",
    "memory_ls.core.inbox",
    "memory_ls.core.checks",
    "memory_ls.core.models",
    "hashlib",
    "argparse",
    "dataclasses",
    "inspect",
    "ast",
    "typing",
]
"""What only a change, an import, the inbox or a check needs (and argparse, which plain
arguments do without: ``tests/cli/test_cli_parsing.py``): ``inject`` and ``list`` read.
Nor ``dataclasses`` (with ``inspect`` and ``ast``, ~10 ms, and ~0.5 ms a class built):
the read path's classes are ``memory_ls.core.records`` records; nor ``typing`` (~3.5 ms):
the read path's modules import it for type checkers only (``TYPE_CHECKING = False``)."""


def modules_after(workspace: Workspace, code: str) -> set[str]:
    """The top-level names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    # The names are taken before this script's own `import json`.
    script = code + (
        "\nimport sys\n_names = sorted(sys.modules)\nimport json\n"
        "print(json.dumps(_names), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=workspace.root,
        env=workspace.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    names = json.loads(done.stderr.strip().splitlines()[-1])
    return set(names)


def loaded(names: set[str], wanted: list[str]) -> list[str]:
    return [w for w in wanted if w in names or any(n.startswith(w + ".") for n in names)]


def test_the_language_server_and_its_similar_pass_import_no_mcp_numpy_or_schemas(
    workspace: Workspace,
) -> None:
    code = textwrap.dedent(
        """
        from memory_ls.server.server import create_server
        from memory_ls.server.diagnostics import Analysis
        ls = create_server()
        keys = [f"run the tests before push number {i}" for i in range(300)]
        assert Analysis.all_pairs(keys, 85.0)  # the similar pass, as after an open
        """
    )
    names = modules_after(workspace, code)
    assert "pygls" in names  # the check itself works
    assert loaded(names, NEVER_IN_SERVE) == []


NEVER_IN_STDIO_SERVE = ["ssl", "_ssl", "hashlib", "_hashlib"]
"""TLS and OpenSSL (libssl, libcrypto: 4.8 MB resident) have no use in ``serve`` over
stdio or TCP; asyncio imports ``ssl`` for TLS it does not need there, and hashlib waits
for a proposal's id (``memory_ls/server/footprint.py``)."""


def test_serve_as_the_cli_starts_it_loads_no_tls_nor_openssl(workspace: Workspace) -> None:
    code = textwrap.dedent(
        """
        import os
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # stdin at its end: serve returns
        from memory_ls.cli import main
        assert main(["serve"]) == 0
        from memory_ls.server.diagnostics import Analysis
        keys = [f"run the tests before push number {i}" for i in range(300)]
        assert Analysis.all_pairs(keys, 85.0)  # the similar pass, as after an open
        from memory_ls.core.checks import note_hash
        assert len(note_hash("run the tests")) == 16  # each publish names its notes so
        """
    )
    names = modules_after(workspace, code)
    assert {"pygls", "asyncio", "memory_ls.core.inbox", "rapidfuzz"} <= names
    never = [n for n in NEVER_IN_SERVE if n != "memory_ls.cli"]  # the CLI starts it here
    assert loaded(names, [*never, *NEVER_IN_STDIO_SERVE, *AT_FIRST_USE_IN_SERVE]) == []


AT_FIRST_USE_IN_SERVE = ["memory_ls.core.fixes", "memory_ls.store.git", "memory_ls.store.bridges"]
"""Modules no open or keystroke needs: a code action, a format, a ``memory.sync`` or a
``memory.import`` imports them when first asked (issue 11's cold start)."""


def test_the_server_imports_its_code_actions_sync_and_import_at_first_use(
    workspace: Workspace,
) -> None:
    code = "from memory_ls.server import footprint\nfootprint.import_server()"
    names = modules_after(workspace, code)
    assert "memory_ls.server.server" in names
    assert loaded(names, AT_FIRST_USE_IN_SERVE) == []


@pytest.mark.parametrize("verb", [["inject"], ["list", "--json"]])
def test_the_read_verbs_import_only_what_they_print(workspace: Workspace, verb: list[str]) -> None:
    workspace.write("project", ["run the tests before push", "Run the tests before push!"])
    workspace.write("global", ["prefer rg"])
    code = f"from memory_ls.cli import main\nmain({verb!r})"
    names = modules_after(workspace, code)
    assert "memory_ls.store.runtime" in names
    assert loaded(names, NEVER_IN_READ_VERBS) == []
    assert loaded(names, READ_VERBS_SKIP) == []
    if verb == ["inject"]:
        # No configuration file and no trust.json here: nothing to read as JSON, or print,
        # and no number to read exactly.
        assert loaded(names, ["json", "decimal"]) == []


QUICK_SKIP = ["json", "signal", "threading", "math", "enum"]
"""What the read verbs run as the program do without (issue 11, h/cli60): ``json`` (the
``--json`` text is built by ``core/json_text``), ``signal`` (Python's own SIGINT handler
is kept), ``threading`` (its locks come from ``_thread``), ``math`` (imported where a
number is judged). ``enum`` stays: ``re`` needs it."""


@pytest.mark.parametrize("verb", [["inject"], ["list", "--json"], ["path", "--json"]])
def test_the_read_verbs_run_as_the_program_import_neither_json_signal_nor_threading(
    workspace: Workspace, verb: list[str]
) -> None:
    workspace.write("project", ["run the tests before push", "Run the tests before push!"])
    workspace.write("global", ["prefer rg"])
    r = workspace.cli(*verb, python_flags=["-X", "importtime"])
    assert r.returncode == 0, r.stderr
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "memory_ls.store.runtime" in imported  # the probe does see the imports
    assert loaded(imported, QUICK_SKIP) == ["enum"]


CHECK_SKIP = ["memory_ls.core.models", "typing_extensions", "inspect", "ast", "dis"]
"""What ``check`` does without when no instruction file is there to judge (issue 11,
h/check150b): the boundary shapes of ``core.models`` and what typing_extensions brings."""


@pytest.mark.parametrize("size", [2, 400])
def test_check_leaves_rapidfuzz_to_its_worker_and_never_imports_numpy(
    workspace: Workspace, size: int
) -> None:
    # 400 distinct notes take the matrix pass (MATRIX_FROM), read as bytes without numpy.
    # On Linux the pass runs in check's forked worker (store/similar_pass.py), which
    # imports the scorer while check reads the stores: check itself never does.
    notes = ["run the tests before push", *(f"note {i} about module m{i * 7}" for i in range(size))]
    workspace.write("project", notes[:size])
    names = modules_after(workspace, "from memory_ls.cli import main\nmain(['check'])")
    assert ("rapidfuzz" in names) is not sys.platform.startswith("linux")
    assert loaded(names, [w for w in NEVER_IN_READ_VERBS if w != "rapidfuzz"]) == []
    # Plain arguments are read without argparse; without an instruction file to judge,
    # the bridges (and the actions and inbox they bring) are not loaded.
    skipped = ["memory_ls.core.actions", "memory_ls.core.bridges", "memory_ls.core.inbox"]
    assert loaded(names, [*skipped, "hashlib", "argparse"]) == []
    # Its classes are records (memory_ls.core.records): dataclasses is not loaded. Nor
    # are the boundary shapes: core.models' TypedDicts come from typing_extensions, which
    # imports inspect, ast and dis (~10 ms); the checks name its types for mypy only.
    assert loaded(names, [*CHECK_SKIP, "dataclasses"]) == []
