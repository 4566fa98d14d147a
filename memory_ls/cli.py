"""The ``memory-ls`` command line (SPEC §8): a thin shell over the runtime.

Read-only verbs (``list``, ``path``, ``inject``, ``doctor``, ``check``) import
neither pygls nor lsprotocol nor pydantic, so an agent can call them before
every run; ``serve`` and ``mcp`` import their stacks only when chosen.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory_ls import __version__

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2

VERBS = (
    "list",
    "add",
    "update",
    "forget",
    "merge",
    "move",
    "clear",
    "path",
    "inject",
    "doctor",
    "check",
    "serve",
    "mcp",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-ls",
        description="Language server and tools for an AI coding agent's memory files.",
    )
    parser.add_argument("--version", action="version", version=f"memory-ls {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, help_: str, *args: tuple[str, str]) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=help_, description=help_)
        p.add_argument("--scope", default="project", choices=("project", "global"))
        p.add_argument("--project", default=None, metavar="DIR", help="project directory")
        p.add_argument("--agent-dir", default=None, metavar="DIR")
        trust = p.add_mutually_exclusive_group()
        trust.add_argument("--trusted", dest="trusted", action="store_const", const=True)
        trust.add_argument("--untrusted", dest="trusted", action="store_const", const=False)
        p.add_argument("--json", action="store_true", help="print JSON")
        for arg, arg_help in args:
            p.add_argument(arg, help=arg_help)
        return p

    verb("list", "List the notes of both scopes.")
    verb("add", "Add a note.", ("text", "the note"))
    verb("update", "Replace a note.", ("text", "the note as stored")).add_argument(
        "--to", required=True, help="the new text"
    )
    verb("forget", "Remove a note (exact text).", ("text", "the note as stored"))
    verb(
        "merge", "Merge two notes into one.", ("text", "the first note"), ("other", "the second")
    ).add_argument("--to", required=True, help="the merged text")
    verb("move", "Move a note from --scope to the other scope.", ("text", "the note"))
    verb("clear", "Remove every note of --scope (asks first).").add_argument(
        "--yes", action="store_true", help="do not ask"
    )
    verb("path", "Print both store paths and the trust decision.")
    verb("inject", "Print the recall body the agent injects.")
    verb("doctor", "Report on both stores, trust, config and recall.")
    check = verb("check", "Lint memory files like a linter.")
    check.add_argument("files", nargs="*", metavar="FILE")
    check.add_argument("--format", default="text", choices=("text", "json", "sarif"))
    serve = verb("serve", "Run the language server (stdio by default).")
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--tcp", metavar="HOST:PORT")
    transport.add_argument("--ws", metavar="HOST:PORT")
    verbs.add_parser("mcp", help="Run the MCP server over stdio.", add_help=False)
    return parser


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _host_port(value: str, parser: argparse.ArgumentParser) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"expected HOST:PORT, got {value!r}")
    return host, int(port)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["mcp"]:
        from memory_ls.mcp_server import main as mcp_main

        return mcp_main(args_list[1:])
    parser = _parser()
    args = parser.parse_args(args_list)
    if args.verb == "serve":
        from memory_ls.server.server import serve  # type: ignore[import-not-found,unused-ignore]

        if args.tcp:
            return int(serve("tcp", *_host_port(args.tcp, parser)))
        if args.ws:
            return int(serve("ws", *_host_port(args.ws, parser)))
        return int(serve("stdio", None, None))
    try:
        return _run(args)
    except BrokenPipeError:  # e.g. `memory-ls list | head`
        return EXIT_OK


def _runtime(args: argparse.Namespace) -> Any:
    from memory_ls.store.runtime import MemoryRuntime

    start = Path(os.path.realpath(args.project or os.getcwd()))
    return MemoryRuntime(start, agent_dir=args.agent_dir, trusted=args.trusted)


def _run(args: argparse.Namespace) -> int:
    if args.verb == "check":
        return _check(args)
    runtime = _runtime(args)
    if args.verb == "path":
        info = runtime.path_info()
        if args.json:
            _print_json(info)
        else:
            trust = "trusted" if info["trusted"] else "untrusted"
            print(f"project: {info['project']}\nglobal: {info['global']}")
            print(f"trust: {trust} ({info['trustReason']})")
        return EXIT_OK
    if args.verb == "inject":
        result = runtime.inject()
        if args.json:
            _print_json(result)
        elif result["body"] is not None:
            print(result["body"])
        return EXIT_OK
    if args.verb == "doctor":
        if args.json:
            _print_json(runtime.doctor_report())
        else:
            print(runtime.doctor_text(), end="")
        return EXIT_OK
    if args.verb == "clear" and not args.yes:
        # A store that may not be changed at all is refused before anyone is asked.
        refused = runtime.refusal(args.scope)
        if refused is not None:
            return _print_result(runtime.result("clear", args.scope, error=refused), args)
        if not _confirm_clear(runtime, args.scope, args.json):
            return EXIT_REFUSED
    fields = {"scope": args.scope}
    for name in ("text", "other", "to"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return _print_result(runtime.run(args.verb, fields), args)


def _print_result(result: Any, args: argparse.Namespace) -> int:
    """Print a ``MemoryResult`` (JSON or text); its exit code."""
    from memory_ls.core.render import result_text

    if args.json:
        _print_json(result)
    elif args.verb == "list":
        print(result_text({k: v for k, v in result.items() if k != "error"}))  # type: ignore[arg-type]
        if "error" in result:
            print(f"Error: {result['error']}", file=sys.stderr)
    else:
        stream = sys.stderr if "error" in result else sys.stdout
        print(result_text(result), file=stream)
    return EXIT_REFUSED if "error" in result else EXIT_OK


CLEAR_NEEDS_YES = "clear needs --yes when not run on a terminal."


def _confirm_clear(runtime: Any, scope: str, as_json: bool = False) -> bool:
    """Ask on a terminal; anywhere else, refuse without ``--yes``."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        if as_json:
            _print_json(runtime.result("clear", scope, error=CLEAR_NEEDS_YES))
        else:
            print(f"Error: {CLEAR_NEEDS_YES}", file=sys.stderr)
        return False
    count = len(runtime.notes(scope))
    sys.stderr.write(f"Remove all {count} {scope} note(s) from {runtime.paths[scope]}? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        print("Nothing was cleared.", file=sys.stderr)
        return False
    return True


def _check(args: argparse.Namespace) -> int:
    from memory_ls.store.lint import lint_path, lint_stores, render_reports

    if args.files:
        project = Path(os.path.realpath(args.project)) if args.project else None
        reports = [lint_path(Path(f), args.agent_dir, args.trusted, project) for f in args.files]
    else:
        reports = lint_stores(_runtime(args))
    output, failing = render_reports(reports, "json" if args.json else args.format)
    if output:
        print(output)
    errors = [r.error for r in reports if r.error]
    for error in errors:
        print(f"Error: {error}", file=sys.stderr)
    return EXIT_REFUSED if failing or errors else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
