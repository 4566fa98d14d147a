"""The ``memory-ls`` command line (SPEC §8): a thin shell over the runtime.

Read-only verbs (``list``, ``path``, ``inject``, ``doctor``, ``check``) import
neither pygls nor lsprotocol nor pydantic, so an agent can call them before
every run; ``serve`` and ``mcp`` import their stacks only when chosen.

Parsing is argparse, one parser per verb built from one table of options, so
each verb offers exactly the options it uses and its help and the top-level
help cannot drift from what is parsed. :func:`_arrange` does the three things
argparse gets wrong: a bare ``--`` (refused when a verb has no argument after
it), a literal ``--`` argument after the first (dropped), and an option value
that begins with ``-`` (``--to -b``, taken for an option). The plain arguments of
the read verbs an agent runs before every run (``inject --project DIR``) are read by
:func:`_simple_args` into the namespace argparse would give, without importing it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

from memory_ls import __version__
from memory_ls.core.records import record

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    # argparse (with gettext, and shutil with bz2, lzma and zlib when a parser is built)
    # is imported when a verb's arguments need it: `inject --project DIR` does not.
    import argparse
    from collections.abc import Callable
    from types import FrameType
    from typing import Any


EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2

PROG = "memory-ls"


@record
class Option:
    """One option: its flag, the value it takes (``None`` for a switch) and its help."""

    flag: str
    metavar: str | None
    help: str
    """Says the default, as SPEC §8 asks of every verb's help."""


OPTIONS: dict[str, Option] = {
    o.flag: o
    for o in (
        Option("--scope", "project|global", "the store to act on (default: project)"),
        Option(
            "--project",
            "DIR",
            "any folder of the project, or of one of its worktrees "
            "(default: the current directory)",
        ),
        Option(
            "--agent-dir",
            "DIR",
            "the folder of the global store (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent)",
        ),
        Option(
            "--trusted",
            None,
            "trust the project: its notes are read, recalled and written (default: decided "
            "by Pi's trust.json, then by the project's trust-requiring files)",
        ),
        Option(
            "--untrusted",
            None,
            "do not trust the project: its notes are neither recalled nor changed "
            "(default: decided as without --trusted)",
        ),
        Option("--json", None, "print JSON (default: text)"),
        Option("--to", "NEW", "the new text (required; no default)"),
        Option("--yes", None, "clear without asking (default: ask on a terminal, else refuse)"),
        Option(
            "--check",
            None,
            "write nothing; exit 1 when the block is missing or out of date (default: write it)",
        ),
        Option("--format", "text|json|sarif", "how to print findings (default: text)"),
        Option("--tcp", "HOST:PORT", "serve over TCP (default: stdio)"),
        Option(
            "--propose",
            None,
            "queue the change in the scope's review inbox instead of writing it (default: write)",
        ),
        Option("--by", "NAME", "who proposes, as the inbox records it (default: cli)"),
        Option("--all", None, "every waiting proposal (default: only the IDs given)"),
        Option(
            "--text",
            "T",
            "accept an add with this text instead (one ID only; default: as proposed)",
        ),
        Option("--ws", "HOST:PORT", "serve over WebSocket (default: stdio)"),
        Option(
            "--global-store",
            None,
            "set up the repository that holds the agent dir, for the global store "
            "(default: the project's repository)",
        ),
    )
}

EXCLUSIVE = (("--trusted", "--untrusted"), ("--tcp", "--ws"))
"""Options that cannot be given together."""

COMMON = ("--project", "--agent-dir", "--trusted", "--untrusted", "--json")
"""The options of every verb that reads the stores."""

PROPOSE = ("--propose", "--by")
"""The review options of a verb an agent may propose instead (SPEC §12)."""


@record
class Verb:
    """One verb: what it does, its arguments and exactly the options it uses."""

    name: str
    summary: str
    args: tuple[tuple[str, str], ...] = ()
    """``(name, help)`` of each positional argument."""
    options: tuple[str, ...] = COMMON
    required: tuple[str, ...] = ()
    overrides: tuple[Option, ...] = ()
    """Options whose values, default or help differ for this verb (``import --format``,
    ``export --to``, ``sync --scope``): the first of a ``|`` list is the default."""

    def option(self, flag: str) -> Option:
        """The option ``flag`` as this verb takes it."""
        return next((o for o in self.overrides if o.flag == flag), OPTIONS[flag])

    nargs: str | None = None
    """How many of its one argument argparse takes: ``*`` any number, ``+`` one or more."""
    no_default: tuple[str, ...] = ()
    """Options that are unset unless given (``--scope`` of accept: both inboxes)."""


VERBS: dict[str, Verb] = {
    v.name: v
    for v in (
        # `list` echoes --scope in its result (SPEC §3: every result names a scope).
        Verb("list", "List the notes of both scopes.", options=("--scope", *COMMON)),
        Verb("add", "Add a note.", (("TEXT", "the note"),), ("--scope", *PROPOSE, *COMMON)),
        Verb(
            "update",
            "Replace every note equal to TEXT with NEW.",
            (("TEXT", "the note as stored"),),
            ("--scope", "--to", *PROPOSE, *COMMON),
            ("--to",),
        ),
        Verb(
            "forget",
            "Remove every note equal to TEXT (exact, case-sensitive).",
            (("TEXT", "the note as stored"),),
            ("--scope", *PROPOSE, *COMMON),
        ),
        Verb(
            "merge",
            "Replace TEXT with NEW and remove OTHER, in one write.",
            (("TEXT", "the first note"), ("OTHER", "the second note")),
            ("--scope", "--to", *COMMON),
            ("--to",),
        ),
        Verb(
            "move",
            "Move a note from --scope to the other scope.",
            (("TEXT", "the note"),),
            ("--scope", *COMMON),
        ),
        Verb(
            "clear",
            "Remove every note of --scope (asks first).",
            options=("--scope", "--yes", *COMMON),
        ),
        Verb("path", "Print both store paths and the trust decision."),
        Verb("inject", "Print the recall body the agent injects."),
        Verb("doctor", "Report on both stores, trust, config and recall."),
        Verb(
            "check",
            "Lint memory files like a linter (default: both stores of --project).",
            (("FILE", "a memory file to check"),),
            ("--format", *COMMON),
            nargs="*",
            overrides=(
                Option("--json", None, "the same as --format json (default: text)"),
                Option(
                    "--project",
                    "DIR",
                    "the project whose stores are checked, or that a global store given as "
                    "FILE is checked against (default: the current directory)",
                ),
            ),
        ),
        Verb(
            "import",
            "Import notes from other agents' memory files into --scope (one write).",
            (("FILE", "a memory file of another agent (Claude Code, Gemini CLI, Hermes, notes)"),),
            ("--format", "--scope", *PROPOSE, *COMMON),
            nargs="+",
            overrides=(
                Option(
                    "--propose",
                    None,
                    "queue one add proposal per new note in the scope's review inbox "
                    "(one inbox write) instead of writing the store (default: write)",
                ),
                Option(
                    "--format",
                    "auto|markdown|claude|gemini|hermes",
                    "how to read FILE: markdown/claude take every bullet outside code fences, "
                    "gemini the bullets under '## Gemini Added Memories', hermes each "
                    "entry between lines holding only § (default: auto, picked by content)",
                ),
            ),
        ),
        Verb(
            "export",
            "Keep a block in an instruction file (AGENTS.md, CLAUDE.md, ...) equal to the recall body.",
            options=("--to", "--check", *COMMON),
            required=("--to",),
            overrides=(
                Option(
                    "--to",
                    "FILE",
                    "the instruction file to keep the block in, relative to the current "
                    "directory (required; no default)",
                ),
            ),
        ),
        Verb(
            "inbox",
            "List the proposals waiting for review in both inboxes.",
            options=COMMON,
        ),
        Verb(
            "accept",
            "Accept proposals: run each one's change now (ID... or --all).",
            (("ID", "a proposal's id"),),
            ("--all", "--scope", "--text", "--to", *COMMON),
            overrides=(
                Option(
                    "--scope",
                    "project|global",
                    "the inbox to look in (default: both; with --all, both inboxes)",
                ),
                Option(
                    "--to",
                    "NEW",
                    "accept an update with this new text instead (one ID only; "
                    "default: as proposed)",
                ),
            ),
            nargs="*",
            no_default=("--scope",),
        ),
        Verb(
            "reject",
            "Reject proposals: drop them from the inbox (ID... or --all).",
            (("ID", "a proposal's id"),),
            ("--all", "--scope", *COMMON),
            overrides=(
                Option(
                    "--scope",
                    "project|global",
                    "the inbox to look in (default: both; with --all, both inboxes)",
                ),
            ),
            nargs="*",
            no_default=("--scope",),
        ),
        Verb(
            "serve",
            "Run the language server (stdio by default).",
            options=("--tcp", "--ws"),
        ),
        Verb("mcp", "Run the MCP server over stdio (see: memory-ls mcp --help).", options=()),
        Verb(
            "merge-file",
            "Merge three versions of a memory file note by note, into CURRENT "
            "(git's merge driver: %O %A %B).",
            (
                # argparse %-formats help: "%%O" prints as git's "%O".
                ("BASE", "the common ancestor (git's %%O)"),
                ("CURRENT", "this side, overwritten with the result (git's %%A)"),
                ("OTHER", "the other side (git's %%B)"),
            ),
            options=(),
        ),
        Verb(
            "git-setup",
            "Set up git's note-wise merge of the store in its repository (idempotent).",
            options=("--project", "--agent-dir", "--global-store"),
            overrides=(
                Option(
                    "--agent-dir",
                    "DIR",
                    "with --global-store, the folder of the global store "
                    "(default: $PI_CODING_AGENT_DIR, else ~/.pi/agent)",
                ),
            ),
        ),
        Verb(
            "sync",
            "Commit the store, pull with the merge driver and push, in its git repository.",
            options=("--scope", "--project", "--agent-dir", "--trusted", "--untrusted", "--json"),
            overrides=(
                Option(
                    "--scope",
                    "global|project",
                    "the store to sync (default: global; project only when asked)",
                ),
            ),
        ),
    )
}


def _top_help() -> str:
    """The top-level help: every verb, the common options, and where options go."""
    import textwrap

    def rows(pairs: list[tuple[str, str]]) -> str:
        width = max(len(label) for label, _ in pairs) + 2
        return "\n".join(
            textwrap.fill(
                text,
                width=100,
                initial_indent=f"  {label:<{width}}",
                subsequent_indent=" " * (width + 2),
            )
            for label, text in pairs
        )

    shown = ("--scope", *COMMON)
    options = [
        (f"{f} {OPTIONS[f].metavar}" if OPTIONS[f].metavar else f, OPTIONS[f].help) for f in shown
    ]
    return (
        f"usage: {PROG} VERB [options] [--] [args]\n\n"
        "Language server, command line and MCP server for an AI coding agent's memory files.\n\n"
        f"verbs:\n{rows([(name, v.summary) for name, v in VERBS.items()])}\n\n"
        "options go after the verb; each verb takes the ones it uses "
        f"({PROG} VERB --help lists them):\n"
        + rows(
            [
                *options,
                ("--", "ends the options, so a note may begin with -"),
                ("-h, --help", "show this help (after a verb: that verb's)"),
                ("--version", "print the version"),
            ]
        )
        + "\n"
    )


def _verb_parser(verb: Verb) -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog=f"{PROG} {verb.name}",
        description=verb.summary,
        epilog="-- ends the options, so a note may begin with -." if verb.args else None,
        allow_abbrev=False,  # `--proj` would slip past _arrange's value joining
    )
    for name, help_ in verb.args:
        nargs = verb.nargs
        parser.add_argument(name.lower(), metavar=name, nargs=nargs, help=help_)
    groups: dict[str, Any] = {}
    for flag in verb.options:
        option = verb.option(flag)
        help_ = option.help
        # --trusted/--untrusted and --tcp/--ws are either-or.
        pair = next((p for p in EXCLUSIVE if flag in p), None)
        target: Any = parser
        if pair is not None:
            if pair[0] not in groups:
                groups[pair[0]] = parser.add_mutually_exclusive_group()
            target = groups[pair[0]]
        if flag in ("--trusted", "--untrusted"):
            target.add_argument(
                flag,
                dest="trusted",
                action="store_const",
                const=flag == "--trusted",
                default=None,
                help=help_,
            )
        elif option.metavar is None:
            target.add_argument(flag, action="store_true", help=help_)
        else:
            choices = option.metavar.split("|") if "|" in option.metavar else None
            target.add_argument(
                flag,
                metavar=option.metavar if choices is None else None,
                choices=choices,
                default=choices[0] if choices and flag not in verb.no_default else None,
                required=flag in verb.required,
                help=help_,
            )
    return parser


def _arrange(tokens: Sequence[str], verb: Verb) -> list[str]:
    """The verb's arguments as argparse must see them to read them as SPEC §8 says.

    ``--opt VALUE`` becomes ``--opt=VALUE``, so a value may begin with ``-`` (a
    value ``--`` kept as one, see :data:`DASHES`); a ``--`` with nothing after it is dropped; any other ``--`` is kept once,
    before the arguments that follow it.
    """
    takes_value = {f for f in verb.options if verb.option(f).metavar is not None}
    out: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            rest = list(tokens[i + 1 :])
            break
        flag, eq, value = token.partition("=")
        if token in takes_value and i + 1 < len(tokens):
            flag, eq, value = token, "=", tokens[i + 1]
            i += 1
        if flag in takes_value and eq:
            # argparse drops a "--" value too (`--to=--` read as `[]`): stood in for.
            out.append(f"{flag}={DASHES if value == '--' else value}")
        else:
            out.append(token)
        i += 1
    # argparse drops every later "--" from arguments too; a NUL cannot be in argv,
    # so this stand-in for a literal "--" argument is safe (see _restore).
    return [*out, "--", *(DASHES if a == "--" else a for a in rest)] if rest else out


DASHES = "\0--"
"""A literal ``--`` argument while argparse reads the arguments."""

SIMPLE_VERBS = ("inject", "list", "path", "doctor", "check")
"""Verbs read without argparse when plain: only options, and no argument (``check``'s
files are optional)."""


def _simple_args(tokens: Sequence[str], verb: Verb) -> argparse.Namespace | None:
    """``tokens`` read as argparse reads them, for the plain cases of :data:`SIMPLE_VERBS`.

    Plain: each option at most once, each value non-empty and not starting with ``-``,
    ``--scope`` one of its choices, no ``--trusted`` with ``--untrusted``, nothing
    else. Anything else returns ``None`` and argparse reads it (help, errors and
    all); ``tests/cli/test_cli_parsing.py`` holds the two to the same namespace.
    An agent runs ``inject`` before every run: argparse is a tenth of its time.
    """
    if verb.name not in SIMPLE_VERBS or verb.required or (verb.args and verb.nargs != "*"):
        return None
    # An optional argument list that is not given is empty, as argparse reads it.
    values: dict[str, object] = {name.lower(): [] for name, _ in verb.args}
    for flag in verb.options:
        option = verb.option(flag)
        if flag in ("--trusted", "--untrusted"):
            values["trusted"] = None
        elif option.metavar is None:
            values[flag[2:].replace("-", "_")] = False
        else:
            choices = option.metavar.split("|") if "|" in option.metavar else None
            default = choices[0] if choices and flag not in verb.no_default else None
            values[flag[2:].replace("-", "_")] = default
    seen: set[str] = set()
    i = 0
    while i < len(tokens):
        flag, eq, value = tokens[i].partition("=")
        if flag not in verb.options or flag in seen:
            return None
        seen.add(flag)
        option = verb.option(flag)
        if option.metavar is None:
            if eq:  # `--json=x`: argparse's error
                return None
            if flag in ("--trusted", "--untrusted"):
                if {"--trusted", "--untrusted"} <= seen:
                    return None
                values["trusted"] = flag == "--trusted"
            else:
                values[flag[2:].replace("-", "_")] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= len(tokens):
                return None
            value = tokens[i + 1]
            i += 1
        i += 1
        if not value or value.startswith("-"):
            return None
        if "|" in option.metavar and value not in option.metavar.split("|"):
            return None
        values[flag[2:].replace("-", "_")] = value
    namespace: argparse.Namespace = SimpleNamespace(**values)  # type: ignore[assignment]
    return namespace


def _restore(args: argparse.Namespace) -> argparse.Namespace:
    """Put back the literal ``--`` arguments that :func:`_arrange` stood in for."""
    for name, value in vars(args).items():
        if value == DASHES:
            setattr(args, name, "--")
        elif isinstance(value, list):
            setattr(args, name, ["--" if v == DASHES else v for v in value])
    return args


LONG_TEXT = 16 * 1024
"""Characters from which :func:`say` encodes the text itself and writes the bytes."""


class OutputError(Exception):
    """Standard output or error could not take the command's text (its message says why)."""


output_failed = False
"""Set once an :class:`OutputError` was reported: the text still buffered for the stream
cannot be written either, so the program ends without flushing it (``__main__``)."""


def _output_error(exc: Exception, err: bool) -> OutputError:
    """The one-line reason for a failed write of ``say``'s text."""
    where = "standard error" if err else "standard output"
    if isinstance(exc, UnicodeEncodeError):
        bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
        return OutputError(
            f"{where} cannot write {bad!r} in its encoding ({exc.encoding}); "
            "use a UTF-8 locale or set PYTHONIOENCODING=utf-8"
        )
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return OutputError(f"cannot write to {where}: {reason}")


def say(text: str = "", *, err: bool = False, end: str = "\n") -> None:
    """Write ``text`` to standard output (``err``: standard error): the CLI's one way out.

    A path from a folder whose name is not UTF-8 holds lone surrogates, which
    cannot be written as UTF-8 (a crash under a strict locale, bytes that are
    not UTF-8 under a lenient one); they are written as U+FFFD
    (:func:`~memory_ls.core.text.without_lone_surrogates`).
    """
    from memory_ls.core.text import without_lone_surrogates

    stream = sys.stderr if err else sys.stdout
    if stream is None:  # its descriptor was closed before the start (`2>&-`, `>&-`)
        if err:
            return  # nowhere to say it: the exit status still tells, unchanged
        raise _output_error(OSError(errno.EBADF, os.strerror(errno.EBADF)), err)
    buffer = _utf8_buffer(stream) if len(text) > LONG_TEXT else None
    try:
        if buffer is None:
            stream.write(without_lone_surrogates(text + end))
            return
        # Encoded once, to the bytes the stream would write (the lone-surrogate check and
        # the stream each encoded it: a megabyte of code points when a note holds an emoji).
        try:
            data = text.encode()
        except UnicodeEncodeError:  # a lone surrogate, the one thing UTF-8 refuses
            data = without_lone_surrogates(text).encode()
        _write_bytes(stream, buffer, data, without_lone_surrogates(end).encode())
    except BrokenPipeError:
        raise  # the reader left (`| head`): main's own case
    except (UnicodeEncodeError, OSError) as exc:
        raise _output_error(exc, err) from None


def _say_utf8(data: bytes) -> None:
    """Write ``data`` (UTF-8 without a lone surrogate) and a line break to standard output:
    :func:`say` of its text."""
    buffer = _utf8_buffer(sys.stdout)
    if buffer is None:  # a stream of another encoding: handed the text
        say(data.decode())
        return
    try:
        _write_bytes(sys.stdout, buffer, data, b"\n")
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _output_error(exc, False) from None


def _write_bytes(stream: Any, buffer: Any, *chunks: bytes) -> None:
    """Write ``chunks`` to ``buffer``, the byte stream under the text stream ``stream``."""
    stream.flush()  # what was written as text goes first
    for chunk in chunks:
        view = memoryview(chunk)
        while view:  # a buffered writer takes it all; a raw file (`python -u`) may take part
            written = buffer.write(view)
            if written is None:  # a full non-blocking pipe: as a buffered writer says
                raise BlockingIOError(errno.EAGAIN, "write could not complete without blocking")
            view = view[written:]
    if stream.line_buffering:  # as the stream would have (a terminal)
        buffer.flush()


def _utf8_buffer(stream: Any) -> Any:
    """The byte stream under ``stream`` when writing UTF-8 to it is what ``stream.write``
    would do (UTF-8, no newline translation, a buffered writer or, under ``python -u`` or
    ``PYTHONUNBUFFERED``, the file itself), else ``None``."""
    import codecs
    import io

    buffer = getattr(stream, "buffer", None)
    if not isinstance(stream, io.TextIOWrapper):
        return None
    if not isinstance(buffer, io.BufferedWriter | io.FileIO):
        return None
    if os.linesep != "\n" or codecs.lookup(stream.encoding).name != "utf-8":
        return None
    return buffer


def _usage_error(message: str) -> int:
    say(f"usage: {PROG} VERB [options] [--] [args]", err=True)
    say(f"{PROG}: error: {message}", err=True)
    return EXIT_USAGE


def _print_json(value: Any) -> None:
    # json.dumps(value, indent=2, ensure_ascii=False)'s text, as UTF-8, built without the
    # standard encoder's Python generators or importing json (core/json_text.py).
    from memory_ls.core.json_text import dumps_utf8

    _say_utf8(dumps_utf8(value))


MAX_PORT = 65535


def _host_port(value: str, parser: argparse.ArgumentParser) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    # ASCII digits only: str.isdigit takes "²" (int() does not) and "٣" (another script).
    if not host or not (port.isascii() and port.isdigit()):
        parser.error(f"expected HOST:PORT, got {value!r}")
    # Compared as text first: int() refuses more than 4300 digits.
    number = port.lstrip("0") or "0"
    if len(number) > len(str(MAX_PORT)) or int(number) > MAX_PORT:
        parser.error(
            f"the port must be 0 to {MAX_PORT}, got {port[:20]}{'…' if len(port) > 20 else ''}"
        )
    return host, int(number)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    tokens = list(sys.argv[1:] if argv is None else argv)
    if not tokens:
        say(_top_help(), err=True, end="")
        return EXIT_USAGE
    first, rest = tokens[0], tokens[1:]
    if first in ("-h", "--help"):
        say(_top_help(), end="")
        return EXIT_OK
    if first == "--version":
        say(f"{PROG} {__version__}")
        return EXIT_OK
    if first.startswith("-"):
        return _usage_error(f"options go after the verb ({PROG} VERB {first} ...)")
    verb = VERBS.get(first)
    if verb is None:
        return _usage_error(f"unknown verb {first!r} (choose from {', '.join(VERBS)})")
    if verb.name == "mcp":
        from memory_ls.mcp_server import main as mcp_main

        return mcp_main(rest)
    simple = _simple_args(rest, verb)
    if simple is not None:
        args = simple
    else:
        args = _restore(_verb_parser(verb).parse_args(_arrange(rest, verb)))
    if verb.name == "merge-file":
        return _merge_file(args)
    if verb.name == "serve":
        from memory_ls.server import footprint  # type: ignore[import-not-found,unused-ignore]

        # Before the server's imports: what it keeps resident (issue 11, footprint.py).
        footprint.limit_malloc()
        serve = footprint.import_server(tls=bool(args.ws)).serve

        if args.tcp:
            return int(serve("tcp", *_host_port(args.tcp, _verb_parser(verb))))
        if args.ws:
            return int(serve("ws", *_host_port(args.ws, _verb_parser(verb))))
        return int(serve("stdio", None, None))
    if getattr(args, "project", None) is not None:
        if not os.path.isdir(os.path.expanduser(args.project)):
            from memory_ls.store.paths import unfollowable

            # SPEC §1: nothing creates a project, and a typo must not pick another one.
            why = unfollowable(Path(os.path.expanduser(args.project))) or "is not a directory"
            _verb_parser(verb).error(f"--project {why}: {args.project}")
    else:
        try:
            os.getcwd()
        except OSError:
            _verb_parser(verb).error("the current directory is gone; give --project DIR")
    try:
        code = _run(verb.name, args)
        try:
            if sys.stdout is not None:  # (None: closed before the start, said by say)
                sys.stdout.flush()  # a full disk says so here, not in the interpreter's exit
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _output_error(exc, False) from None
        return code
    except BrokenPipeError:  # e.g. `memory-ls list | head`
        return EXIT_OK
    except OutputError as exc:
        global output_failed
        output_failed = True
        with contextlib.suppress(OSError):
            os.write(2, f"{PROG}: {exc}\n".encode("utf-8", "replace"))
        return EXIT_REFUSED


def _runtime(args: argparse.Namespace) -> Any:
    from memory_ls.store.paths import project_start
    from memory_ls.store.runtime import MemoryRuntime

    # SPEC §8's canonical form: project_root_for resolves the path (once; not here too).
    # A `--project` in a `.pi` that leads out names that `.pi`'s project, as written.
    start = project_start(Path(os.path.expanduser(args.project or os.getcwd())))
    return MemoryRuntime(start, agent_dir=args.agent_dir, trusted=getattr(args, "trusted", None))


def _trust_line(runtime: Any) -> str:
    from memory_ls.core.render import trust_summary

    trust = runtime.trust()
    return trust_summary(trust.trusted, trust.rule, trust.reason)


def _say_if_untrusted(runtime: Any) -> None:
    """SPEC §8: name the rule that left the project's notes out, off standard output."""
    if not runtime.trust().trusted:
        say(f"Project memory is left out: the project is {_trust_line(runtime)}.", err=True)


def _store_errors(runtime: Any) -> list[str]:
    """Why a store the verb would read cannot be read (an untrusted project's is not read)."""
    scopes = ("project", "global") if runtime.trust().trusted else ("global",)
    return [error for s in scopes if (error := runtime.view(s).file.error)]


def _run(verb: str, args: argparse.Namespace) -> int:
    if verb == "check":
        return _check(args)
    runtime = _runtime(args)
    if verb == "git-setup":
        return _git_setup(runtime, args)
    if verb == "sync":
        return _sync(runtime, args)
    if verb == "import":
        if args.by is not None and not args.propose:
            say(f"{PROG} {verb}: error: --by needs --propose", err=True)
            return EXIT_USAGE
        return _import(runtime, args)
    if verb == "export":
        return _export(runtime, args)
    if verb in ("path", "inject"):
        if verb == "path":
            info = runtime.path_info()
            if args.json:
                _print_json(info)
            else:
                say(f"project: {info['project']}\nglobal: {info['global']}")
                say(f"trust: {_trust_line(runtime)}")
        else:
            _say_if_untrusted(runtime)
            if args.json:
                _print_json(runtime.inject())
            else:
                # The body alone: the result's list of left-out notes is not printed.
                body = runtime.body()
                if body is not None:
                    say(body)
        errors = _store_errors(runtime)
        for error in errors:
            say(f"Error: {error}", err=True)
        return EXIT_REFUSED if errors else EXIT_OK
    if verb == "doctor":
        if args.json:
            _print_json(runtime.doctor_report())
        else:
            say(runtime.doctor_text(), end="")
        return EXIT_OK
    if verb in ("inbox", "accept", "reject"):
        return _review(verb, runtime, args)
    if getattr(args, "propose", False):
        return _propose(verb, runtime, args)
    if getattr(args, "by", None) is not None:
        say(f"{PROG} {verb}: error: --by needs --propose", err=True)
        return EXIT_USAGE
    if verb == "list":
        _say_if_untrusted(runtime)
        # argparse checked the scope: what read_request would; its validators are not loaded.
        return _print_result(verb, runtime.list(args.scope), args)
    if verb == "clear" and not args.yes:
        # A store that may not be changed at all is refused before anyone is asked.
        refused = runtime.refusal(args.scope)
        if refused is not None:
            return _print_result(verb, runtime.result("clear", args.scope, error=refused), args)
        asked_about = runtime.canonical(args.scope)
        if not _confirm_clear(runtime, args.scope, args.json):
            return EXIT_REFUSED
        if (now := runtime.canonical(args.scope)) != asked_about:
            # A folder link on the way pointed elsewhere while the question waited: the
            # "y" was said to the notes of the file asked about, not to this one's.
            from memory_ls.core.actions import clear_moved
            from memory_ls.core.text import display_path

            moved = clear_moved(
                f"{PROG} clear",
                display_path(asked_about),
                display_path(runtime.paths[args.scope]),
                display_path(now),
            )
            return _print_result(verb, runtime.result("clear", args.scope, error=moved), args)
    fields = {"scope": args.scope}
    for name in ("text", "other", "to"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return _print_result(verb, runtime.run(verb, fields), args)


def _print_result(verb: str, result: Any, args: argparse.Namespace) -> int:
    """Print a ``MemoryResult`` (JSON or text); its exit code."""
    if args.json:
        _print_json(result)
        return EXIT_REFUSED if "error" in result else EXIT_OK
    from memory_ls.core.render import result_text

    if verb == "list":
        say(result_text({k: v for k, v in result.items() if k != "error"}))  # type: ignore[arg-type]
        if "error" in result:
            say(f"Error: {result['error']}", err=True)
    else:
        say(result_text(result), err="error" in result)
    return EXIT_REFUSED if "error" in result else EXIT_OK


def _import(runtime: Any, args: argparse.Namespace) -> int:
    """``import FILE…``: every file read first, then one write (SPEC §15)."""
    from memory_ls.core.bridges import import_summary
    from memory_ls.store.bridges import read_import_files

    files = read_import_files([Path(os.path.expanduser(f)) for f in args.file], args.format)
    if files.error is not None:
        # Nothing is imported from a set of files that cannot all be read.
        if args.json:
            _print_json({"added": [], "skipped": [], "refused": [], "error": files.error})
        say(f"Error: {files.error}", err=True)
        return EXIT_REFUSED
    for path in files.empty:
        say(f"No notes found in {path} (format {args.format}).", err=True)
    if args.propose:
        from memory_ls.core.bridges import proposal_summary
        from memory_ls.core.inbox import clean_by
        from memory_ls.store.review import Review

        by = clean_by(args.by, "cli")
        result, plan = Review(runtime).import_proposals(files.candidates, args.scope, by)
        already = plan.already_proposed if plan is not None else frozenset()
        waiting = plan.waiting if plan is not None else 0
        summary = proposal_summary(result, already, waiting)
    else:
        result = runtime.import_notes(files.candidates, args.scope)
        summary = import_summary(result)
    if args.json:
        _print_json(result)
    else:
        say(summary)
    return EXIT_REFUSED if result["refused"] else EXIT_OK


def _export(runtime: Any, args: argparse.Namespace) -> int:
    """``export --to FILE [--check]``: the block written, or (``--check``) judged."""
    from memory_ls.core.bridges import check_message

    # As named: the runtime follows its symlinks (CLAUDE.md -> AGENTS.md stays a link)
    # and refuses one that leads into a store or out of the project.
    target = Path(os.path.abspath(os.path.expanduser(args.to)))
    _say_if_untrusted(runtime)  # the block leaves the project's notes out: say why
    result = runtime.export_to(target, check=args.check)
    if args.check and "error" not in result:
        result["message"] = check_message(result["status"], args.to)
    if args.json:
        _print_json(result)
    elif "error" in result:
        say(f"Error: {result['error']}", err=True)
    else:
        say(result["message"], err=bool(args.check and result["changed"]))
    if "error" in result:
        return EXIT_REFUSED
    return EXIT_REFUSED if args.check and result["changed"] else EXIT_OK


def _note_fields(args: argparse.Namespace) -> dict[str, object]:
    fields: dict[str, object] = {"scope": args.scope}
    for name in ("text", "other", "to"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return fields


def _propose(verb: str, runtime: Any, args: argparse.Namespace) -> int:
    """``add|update|forget --propose``: queue the change for review (SPEC §12)."""
    from memory_ls.core.inbox import clean_by
    from memory_ls.store.review import Review

    result, text = Review(runtime).propose(verb, _note_fields(args), clean_by(args.by, "cli"))
    if args.json:
        _print_json(result)
    else:
        say(text, err="error" in result)
    return EXIT_REFUSED if "error" in result else EXIT_OK


def _review(verb: str, runtime: Any, args: argparse.Namespace) -> int:
    """``inbox``, ``accept`` and ``reject`` (SPEC §12)."""
    from memory_ls.store.review import Review

    review = Review(runtime)
    if verb == "inbox":
        _say_if_untrusted(runtime)
        listing, warnings = review.listing()
        if args.json:
            _print_json(listing)
        else:
            from memory_ls.core.inbox import listing_text

            say(listing_text(listing))
        for warning in warnings:
            say(f"Warning: {warning}", err=True)
        return EXIT_OK
    ids: list[str] = args.id
    if bool(ids) == bool(args.all):
        say(f"{PROG} {verb}: error: give proposal IDs or --all (not both)", err=True)
        return EXIT_USAGE
    if "" in ids:
        # Not "No proposal  in … inbox.": an empty ID names nothing (memory.accept refuses
        # it as a bad selector, the same way).
        say(f"{PROG} {verb}: error: a proposal ID cannot be empty", err=True)
        return EXIT_USAGE
    selected = None if args.all else ids
    if verb == "accept":
        out = review.accept(selected, args.scope, args.text, args.to)
    else:
        out = review.reject(selected, args.scope)
    if args.json:
        _print_json(out)
    else:
        say(out["text"], err="error" in out)
    return EXIT_REFUSED if "error" in out else EXIT_OK


CLEAR_NEEDS_YES = "clear needs --yes when not run on a terminal."


def _confirm_clear(runtime: Any, scope: str, as_json: bool = False) -> bool:
    """Ask on a terminal; anywhere else, refuse without ``--yes``."""
    if not (sys.stdin and sys.stdin.isatty() and sys.stderr and sys.stderr.isatty()):
        if as_json:
            _print_json(runtime.result("clear", scope, error=CLEAR_NEEDS_YES))
        else:
            say(f"Error: {CLEAR_NEEDS_YES}", err=True)
        return False
    count = len(runtime.notes(scope))
    say(f"Remove all {count} {scope} note(s) from {runtime.paths[scope]}? [y/N] ", err=True, end="")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        say("Nothing was cleared.", err=True)
        return False
    return True


def _check(args: argparse.Namespace) -> int:
    from memory_ls.store.lint import lint_paths, lint_stores, render_reports
    from memory_ls.store.paths import real_path

    if args.file:
        project = Path(real_path(os.path.expanduser(args.project))) if args.project else None
        reports = lint_paths([Path(f) for f in args.file], args.agent_dir, args.trusted, project)
    else:
        reports = lint_stores(_runtime(args))
    output, failing = render_reports(reports, "json" if args.json else args.format)
    if output:
        _say_findings(output)
    errors = [r.error for r in reports if r.error]
    counts = {"error": len(errors), "warning": 0, "other": 0}
    for finding in (f for r in reports for f in r.findings):
        severity = finding.severity  # (a property: read once a finding)
        counts[severity if severity in ("error", "warning") else "other"] += 1
    # A closed standard error (`2>&-` into a pipe that is gone) does not change the
    # findings' exit status either.
    with contextlib.suppress(BrokenPipeError):
        for error in errors:
            say(f"Error: {error}", err=True)
        # SPEC §8: one line on standard error, also when clean; a file that could
        # not be read counts as an error.
        say(
            f"{len(reports)} files checked: {counts['error']} errors, "
            f"{counts['warning']} warnings, {counts['other']} other",
            err=True,
        )
    return EXIT_REFUSED if failing or errors else EXIT_OK


def _say_findings(output: str) -> None:
    """Write ``check``'s findings (one document) to standard output, whole or not at all.

    A reader that leaves early (``memory-ls check | head``) is not a success: the
    findings still decide the exit status (SPEC §8), so a closed pipe only stops the
    writing here, and standard output is pointed at the null device, so that neither
    ``main``'s flush nor the interpreter's last one meets the closed pipe again.

    Ctrl-C while the document is being written takes effect once it is written: a
    JSON or SARIF document cut in the middle is worse than none (a CI step that
    parses it). Ctrl-C before the writing begins leaves nothing on standard output.
    """

    def write() -> None:
        say(output)
        sys.stdout.flush()  # the rest of the document leaves here, not at the exit

    try:
        _uninterrupted(write)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


def _uninterrupted(write: Callable[[], object]) -> None:
    """Run ``write`` with Ctrl-C (SIGINT) held back until it returns, then delivered.

    Python checks for signals in the middle of a long write (between the chunks a
    pipe takes), so without this a KeyboardInterrupt can stop a document half
    written. Only the main thread can set a handler; elsewhere ``write`` just runs.
    """
    import signal

    previous = signal.getsignal(signal.SIGINT)
    held: list[FrameType | None] = []
    try:
        if previous is None:  # a handler set outside Python: left alone
            raise ValueError
        signal.signal(signal.SIGINT, lambda _signum, frame: held.append(frame))
    except ValueError:  # or not the main thread
        write()
        return
    try:
        write()
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:  # the interrupt the person asked for, now
            if callable(previous):
                previous(signal.SIGINT, held[0])
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


def _merge_file(args: argparse.Namespace) -> int:
    """git's merge driver: exit 0 when the merge is clean, 1 when git left conflict markers."""
    from memory_ls.store.git import GitRefused, merge_file

    try:
        code, why = merge_file(Path(args.base), Path(args.current), Path(args.other))
    except (GitRefused, OSError) as exc:
        say(f"memory-ls merge-file: {exc}", err=True)
        return EXIT_REFUSED
    if why is not None:
        say(f"memory-ls merge-file: {why}; left to git merge-file.", err=True)
    return code


def _git_setup(runtime: Any, args: argparse.Namespace) -> int:
    from memory_ls.store.git import GitRefused, git_setup, repository_of

    scope = "global" if args.global_store else "project"
    folder = runtime.agent_dir if scope == "global" else runtime.project_root
    try:
        report = git_setup(repository_of(folder, runtime.paths[scope], "set up git"))
    except (GitRefused, OSError) as exc:
        say(f"Error: {exc}", err=True)
        return EXIT_REFUSED
    for change in report.changes:
        say(change)
    if not report.changes:
        say(f"Already set up in {report.repo.root}: nothing changed.")
    else:
        # git does not version its own config: every clone needs this once.
        say(f"Set up in {report.repo.root}; run it once in every other clone too.")
    return EXIT_OK


def _sync(runtime: Any, args: argparse.Namespace) -> int:
    from memory_ls.core.render import sync_text
    from memory_ls.store.git import failed_sync, sync

    scope = args.scope
    refused = runtime.refusal(scope)
    if refused is not None:
        result: Any = failed_sync(scope, refused)
    else:
        folder = runtime.agent_dir if scope == "global" else runtime.project_root
        result = sync(
            scope,
            folder,
            runtime.paths[scope],
            check=lambda real: runtime.store_refusal(scope, real),
        )
    if args.json:
        _print_json(result)
    else:
        say(sync_text(result), err="error" in result)
    return EXIT_REFUSED if "error" in result else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
