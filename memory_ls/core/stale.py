"""Notes that point at what is gone: ``stale-path`` and ``stale-script`` (SPEC §13).

Pure: a note's text gives its *mentions* (:func:`path_mentions`,
:func:`script_mentions`), and mentions judged against a :class:`ProjectSnapshot`
(what is on disk, as plain data the shell gathered) give findings. The shell
keeps the snapshot current from watched-file events, so typing in the store
never walks the project tree; it only asks these functions.

The texts of ``package.json``, a Makefile and a justfile are read here too
(:func:`package_info`, :func:`make_targets`, :func:`just_recipes`).

Columns are ``str`` indices into the text given: pass the note as it stands on
its line (``line[bullet.start:bullet.end]``) and :func:`stale_findings` adds
``bullet.start``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from collections.abc import Container, Iterable, Sequence
from typing import Literal, NamedTuple

from memory_ls.core.checks import Finding, StalePathData, StaleScriptData
from memory_ls.core.notes import Bullet
from memory_ls.core.records import field, record
from memory_ls.core.text import compiled, escape_unseen

# -- what counts as a path mention --------------------------------------------------------

_BACKTICKS_RE = re.compile(r"`+")
_SLASH_WORD_RE = re.compile(r"(?<!\S)\S*/\S*")
"""A whole word (a run of non-whitespace) with a slash in it: the words that can be path
mentions, found in C. The look-behind starts a match only where a word starts, so a word
without a slash costs one scan of it, not one from each of its characters."""
_FORBIDDEN = frozenset("*?[]{}<>$%~")
_SPACE_OR_FORBIDDEN = re.compile(r"[\s*?\[\]{}<>$%~]")
"""A whitespace character (``\\s`` is ``str.isspace``) or one of :data:`_FORBIDDEN`: one
search in C instead of a Python test per character (``check`` runs it on every word
with a slash)."""
_TRAILING = ".,;:!?)"
# A file extension: a dot after something, then up to 10 word characters with a letter
# among them ("3.11" and "v18.2" are versions, not extensions).
_EXTENSION_RE = re.compile(r"[^.]\.(?=[A-Za-z0-9_+-]*[A-Za-z])[A-Za-z0-9_+-]{1,10}$")
# "The path was removed / renamed / moved / is no longer used": such a note knows.
_GONE = (
    r"(?i)\b(?:removed|deleted|renamed|moved|no longer (?:used|exists?|there|needed)"
    r"|not used any ?more)\b"
)
"""Case-blind. Compiled when first asked for (:func:`~memory_ls.core.text.compiled`), as
are the patterns below that ``check`` on a usual store never needs (a Makefile's, a
justfile's, a ``bun run`` file's): their compiles were ~1 ms of every ``check``."""

SKIPPED_FOLDERS = frozenset(
    {".git", "node_modules", "__pycache__", "dist", "build", "target", "venv", ".venv"}
)
"""Folders the project search skips by name (virtual environments are also recognised by
their ``pyvenv.cfg``: see :func:`skipped_folder`)."""
KEPT_HIDDEN_FOLDERS = frozenset({".github", ".pi"})
"""Hidden folders the search still enters."""


@record
class Mention:
    """A path or a script a note names, at ``[start, end)`` of the text it was read from."""

    kind: Literal["path", "script"]
    text: str
    """The path as written, or the script / target / recipe name."""
    start: int
    end: int
    tool: str = ""
    """For a script: ``npm``, ``pnpm``, ``yarn``, ``bun``, ``make`` or ``just``."""
    binary_ok: bool = False
    """For a script: the tool would also run a binary of that name (``yarn X``)."""


def is_path_mention(word: str) -> bool:
    """Whether ``word`` (already trimmed) is a path mention by SPEC §13's rule."""
    return (
        "/" in word
        and "://" not in word
        and _SPACE_OR_FORBIDDEN.search(word) is None
        and not word.startswith(("/", "-", "@", ".."))
    )


def _code_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each backticked span's content.

    What ``_CODE_SPAN_RE.finditer`` finds, found in linear time: the regex, tried at each
    backtick of a long run with no closer, rescans the rest of the line from each one (a
    note of 200,000 backticks took minutes). An opener is a backtick and the rest of its
    run; its closer is the next whole run of exactly that length on the same line, with
    at least one character between; no closer, and the next backtick is tried.
    """
    if "`" not in text:
        return []
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        line_end = text.find("\n", end)
        closer = None
        for opener in range(start, end):
            same = by_length.get(end - opener, [])
            k = bisect.bisect_right(same, i)
            if k < len(same) and (line_end < 0 or runs[same[k]][0] < line_end):
                closer = same[k]
                break
        if closer is None:
            i += 1
            continue
        out.append((end, runs[closer][0]))
        i = closer + 1
    return out


def path_mentions(text: str) -> list[Mention]:
    """Every path mention of a note, in text order: backticked spans and bare words.

    A bare word has leading ``(`` and trailing ``.,;:!?)`` trimmed; a backticked span
    is taken as it is. Words inside a span are not bare words.
    """
    if "/" not in text:
        return []  # the common case: no mention can have a slash
    out: list[Mention] = []
    spans = _code_spans(text) if "`" in text else []
    bare = text
    if spans:
        outside = list(text)
        for start, end in spans:
            content = text[start:end]
            if is_path_mention(content):
                out.append(Mention("path", content, start, end))
            # The span and its backticks are not bare text.
            for i in range(max(0, start - 1), min(len(text), end + 1)):
                outside[i] = " "
        bare = "".join(outside)
    for m in _SLASH_WORD_RE.finditer(bare):
        word, start = m.group(), m.start()
        lead = len(word) - len(word.lstrip("("))
        word = word[lead:].rstrip(_TRAILING)
        start += lead
        if word and is_path_mention(word):
            out.append(Mention("path", word, start, start + len(word)))
    return sorted(out, key=lambda x: x.start)


def says_gone(text: str) -> bool:
    """Whether the note says a path was removed, renamed or moved, or is no longer used."""
    return compiled(_GONE).search(text) is not None


# -- which words make a script reference ---------------------------------------------------

_RUN_WORDS = frozenset({"run", "run-script"})
_NPM_RUN_WORDS = frozenset({"run", "run-script", "rum", "urn"})
# Options that take a value as the next word (npm, pnpm, yarn, bun, make, just).
_VALUE_OPTIONS = frozenset(
    {
        "-w",
        "--workspace",
        "--prefix",
        "-C",
        "--dir",
        "--filter",
        "-F",
        "--cwd",
        "--filter-prod",
        "--test-pattern",
    }
)
# pnpm's own commands and their aliases: `pnpm X` runs script X only when X is none of these.
PNPM_COMMANDS = frozenset(
    [
        "add",
        "i",
        "install",
        "update",
        "up",
        "upgrade",
        "remove",
        "rm",
        "uninstall",
        "un",
        "link",
        "ln",
        "unlink",
        "import",
        "rebuild",
        "rb",
        "prune",
        "fetch",
        "install-test",
        "it",
        "patch",
        "patch-commit",
        "patch-remove",
        "audit",
        "list",
        "ls",
        "ll",
        "la",
        "outdated",
        "why",
        "licenses",
        "run",
        "run-script",
        "test",
        "t",
        "tst",
        "start",
        "exec",
        "dlx",
        "create",
        "publish",
        "pack",
        "recursive",
        "multi",
        "m",
        "server",
        "store",
        "root",
        "bin",
        "setup",
        "init",
        "deploy",
        "doctor",
        "config",
        "c",
        "get",
        "set",
        "env",
        "cat-file",
        "cat-index",
        "find-hash",
        "self-update",
        "approve-builds",
        "ignored-builds",
        "help",
        "dedupe",
        "sbom",
        "login",
        "logout",
        "whoami",
        "version",
        "view",
        "info",
        "docs",
        "search",
        "owner",
        "dist-tag",
        "star",
        "stars",
        "unstar",
        "ping",
        "repo",
        "adduser",
        "access",
        "hook",
        "cache",
        "restart",
        "stop",
    ]
)
# yarn's own commands (classic and berry): `yarn X` runs script X only when X is none of these.
YARN_COMMANDS = frozenset(
    [
        "access",
        "add",
        "audit",
        "autoclean",
        "bin",
        "cache",
        "check",
        "config",
        "constraints",
        "create",
        "dedupe",
        "dlx",
        "exec",
        "explain",
        "generate-lock-entry",
        "global",
        "help",
        "import",
        "info",
        "init",
        "install",
        "licenses",
        "link",
        "list",
        "login",
        "logout",
        "node",
        "npm",
        "outdated",
        "owner",
        "pack",
        "patch",
        "patch-commit",
        "plugin",
        "policies",
        "publish",
        "rebuild",
        "remove",
        "run",
        "search",
        "set",
        "stage",
        "tag",
        "team",
        "test",
        "start",
        "unlink",
        "unplug",
        "up",
        "upgrade",
        "upgrade-interactive",
        "version",
        "versions",
        "why",
        "workspace",
        "workspaces",
    ]
)
WELL_KNOWN_BINARIES = frozenset(
    [
        "tsc",
        "tsx",
        "ts-node",
        "node",
        "jest",
        "vitest",
        "mocha",
        "eslint",
        "prettier",
        "biome",
        "vite",
        "next",
        "nuxt",
        "webpack",
        "rollup",
        "esbuild",
        "playwright",
        "cypress",
        "nodemon",
        "turbo",
        "nx",
        "lerna",
        "changeset",
        "husky",
        "prisma",
        "drizzle-kit",
        "storybook",
        "tailwindcss",
        "svelte-kit",
        "astro",
        "remix",
        "expo",
        "react-scripts",
    ]
)
"""Binaries a package manager runs when no script has their name (``yarn jest``): the
shorthand forms never flag these, nor any name the snapshot lists as a binary or a
dependency."""

_SCRIPT_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_:.+-]*")
_SCRIPT_TRAILING = ".,;:!?)'\""
# A word naming a file, not a script (`bun run src/index.ts`, `bun run server.js`).
_FILE_LIKE = r"\.(?:[cm]?[jt]sx?|json|sh|py)$"
# In prose, `make X` is a command only after a word that says so ("run make test");
# "make sure" is English. `just X` is a command only inside a code span.
_PROSE_RUN_WORDS = frozenset(
    {"run", "runs", "running", "ran", "use", "using", "via", "with", "call", "invoke"}
    | {"execute", "try", "type"}
)
_TOOLS = ("npm", "yarn", "bun", "make", "just")  # "pnpm" holds "npm"
_ANY_TOOL = re.compile("|".join(_TOOLS))
"""Whether a lowercased note holds any of :data:`_TOOLS`, in one search (a plain
alternation is the fastest search: ~3x :data:`_TOOL_WORD_RE`'s, asked only after it)."""
_TOOL_WORD_RE = re.compile(r"(?<![^\s`])(?:p?npm|yarn|bun|make|just)(?![^\s`])")
"""Whether a lowercased note holds a word (a token of :func:`_tokens`: between whitespace,
backticks or the ends) that is a tool's name, in one search: a note without one names no
script ("bundle" holds "bun", and is no tool). Lowercasing changes no whitespace or
backtick, and maps a token whose lowercase is a tool's name to that name in place."""
_WORD_TOKEN_RE = re.compile(r"[^\s`]+")
_COMMAND_BREAKS = frozenset({"&&", "||", ";", "|", "$"})


class _Token(NamedTuple):
    """A word of a note (a tuple: a frozen dataclass took a third of the tokenising)."""

    text: str
    start: int
    in_code: bool
    command_start: bool
    """First word of a code span, or after ``&&``/``;``/``$``, or after a run word in prose."""


def _tokens(text: str) -> list[_Token]:
    spans = _code_spans(text)
    starts = {s for s, _ in spans}
    out: list[_Token] = []
    k = 0  # tokens and spans both come in text order: one pass, not every span per token
    for m in _WORD_TOKEN_RE.finditer(text):
        start = m.start()
        while k < len(spans) and spans[k][1] <= start:
            k += 1
        in_code = k < len(spans) and spans[k][0] <= start
        prev = out[-1].text if out else ""
        command_start = (
            start in starts
            or (in_code and prev in _COMMAND_BREAKS)
            or (not in_code and prev.lower() in _PROSE_RUN_WORDS)
        )
        out.append(_Token(m.group(), start, in_code, command_start))
    return out


_ELSEWHERE_OPTIONS = frozenset(
    {"-C", "--dir", "--prefix", "--cwd", "-f", "--file", "-d", "--justfile", "--working-directory"}
)
"""Options that point the tool at another folder or file: its scripts are not judged."""


def _skip_options(tokens: Sequence[_Token], i: int) -> tuple[int, bool]:
    """The index after the options from ``i`` on, and whether one of them changes the
    folder or the file the tool reads (then the script is not this project's to judge)."""
    elsewhere = False
    while i < len(tokens) and tokens[i].text.startswith("-"):
        word = tokens[i].text
        name = word.split("=", 1)[0]
        # --if-present: a missing script is no error, so not stale either.
        elsewhere = elsewhere or name in _ELSEWHERE_OPTIONS or name == "--if-present"
        takes_value = name in _VALUE_OPTIONS or name in _ELSEWHERE_OPTIONS
        if takes_value and "=" not in word:
            i += 1  # the option's value
        i += 1
    return i, elsewhere


def _script_word(token: _Token) -> tuple[str, int] | None:
    word = token.text.rstrip(_SCRIPT_TRAILING)
    if not _SCRIPT_NAME_RE.fullmatch(word) or word.isdigit():
        return None  # a number is an option's value (`make -j 4 test`), not a name
    return word, token.start


def script_mentions(text: str) -> list[Mention]:
    """Every script a note runs, by SPEC §13: ``npm run X``, ``pnpm [run] X``,
    ``yarn [run] X``, ``bun run X``, ``make X``, ``just X``.

    A word counts only where the tool would run it as a script: after ``run``, or
    (pnpm, yarn) in the shorthand's place when it is none of the tool's own commands.
    Shorthands, ``make`` and ``just`` are read as commands only where a command
    starts (a code span's first word, after ``&&`` / ``;`` / ``$``; ``make`` also
    after "run" in prose) so "make sure" and "just works" stay English.
    """
    low = text.lower()
    if _ANY_TOOL.search(low) is None or _TOOL_WORD_RE.search(low) is None:
        return []  # the common case, decided by a search or two in C
    tokens = _tokens(text)
    out: list[Mention] = []
    for i, tok in enumerate(tokens):
        tool = tok.text.lower() if not tok.in_code else tok.text
        if tool not in ("npm", "pnpm", "yarn", "bun", "make", "just"):
            continue
        j, elsewhere = _skip_options(tokens, i + 1)
        if elsewhere or j >= len(tokens):
            continue
        nxt = tokens[j]
        if tool in ("npm", "pnpm", "yarn", "bun") and nxt.text in (
            _NPM_RUN_WORDS if tool == "npm" else _RUN_WORDS
        ):
            if tool != "npm" and nxt.text == "run-script":
                continue
            k, elsewhere = _skip_options(tokens, j + 1)
            if elsewhere or k >= len(tokens):
                continue
            got = _script_word(tokens[k])
            if got is None or (tool == "bun" and compiled(_FILE_LIKE).search(got[0])):
                continue
            if k + 1 < len(tokens) and tokens[k + 1].text.startswith("--if-present"):
                continue
            name, start = got
            # npm run and pnpm run run scripts only; yarn run and bun run also run binaries.
            out.append(
                Mention("script", name, start, start + len(name), tool, tool in ("yarn", "bun"))
            )
            continue
        if not tok.command_start:
            continue
        if tool in ("pnpm", "yarn"):
            if not tok.in_code:
                continue  # "use pnpm for everything": prose, not a command
            got = _script_word(nxt)
            commands = PNPM_COMMANDS if tool == "pnpm" else YARN_COMMANDS
            if got is None or got[0] in commands or nxt.text.startswith("-"):
                continue
            name, start = got
            out.append(Mention("script", name, start, start + len(name), tool, True))
        elif tool == "make" or (tool == "just" and tok.in_code):
            if tool == "make" and not tok.in_code and nxt.in_code:
                continue
            # Variable assignments (`make V=1 test`) come before the target.
            while j < len(tokens) and "=" in tokens[j].text and tool == "make":
                j += 1
            if j >= len(tokens):
                continue
            got = _script_word(tokens[j])
            if got is None or "::" in tokens[j].text:
                continue
            name, start = got
            out.append(Mention("script", name, start, start + len(name), tool))
    return out


# -- what the project holds ----------------------------------------------------------------


def skipped_folder(name: str, *, has_pyvenv_cfg: bool = False) -> bool:
    """Whether the project search skips a folder of this name (SPEC §13)."""
    if has_pyvenv_cfg or name in SKIPPED_FOLDERS:
        return True
    return name.startswith(".") and name not in KEPT_HIDDEN_FOLDERS


MAKEFILE_NAMES = ("GNUmakefile", "makefile", "Makefile")
"""The root files ``make`` reads, in the order GNU make looks for them (the first found)."""
JUSTFILE_NAMES = ("justfile", "Justfile", ".justfile")
"""The root files ``just`` reads (it matches ``justfile`` in any case; these are the usual)."""
PACKAGE_FILES = ("package.json", "pnpm-workspace.yaml")
"""The files whose change means the package scripts must be read again."""


@record
class MakeTargets:
    """The targets a Makefile defines. ``open`` when it may define others this reading
    cannot see (an ``include``, a target made of variables, a match-anything rule)."""

    names: frozenset[str]
    patterns: tuple[str, ...] = ()
    """Pattern rules' targets (``%.o``)."""
    open: bool = False

    def defines(self, target: str) -> bool:
        """Whether ``make target`` has a rule (or may have one)."""
        if self.open or target in self.names:
            return True
        for pattern in self.patterns:
            before, _, after = pattern.partition("%")
            if (
                len(target) > len(before) + len(after)
                and target.startswith(before)
                and target.endswith(after)
            ):
                return True
        return False


_MAKE_ASSIGN = r"^[^:#=]*?(?:::?=|\?=|\+=|!=|=)"
# No lazy quantifier next to an overlapping one: `[^:#=]*?\s*` rescanned the rest of a
# line from each of its characters (a 1 MB line without a colon never finished).
_MAKE_RULE_RE = re.compile(r"^([^:#=\t][^:#=]*)(::?)(?!=)")


def make_targets(text: str) -> MakeTargets:
    """The targets a Makefile's text defines (its rules, and what ``.PHONY`` names)."""
    names: set[str] = set()
    patterns: list[str] = []
    is_open = False
    lines = text.replace("\r\n", "\n").split("\n")
    joined: list[str] = []
    buf = ""
    for line in lines:  # backslash-newline continues a line
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        joined.append(buf + line)
        buf = ""
    if buf:
        joined.append(buf)
    in_define = False
    for line in joined:
        stripped = line.strip()
        if in_define:
            in_define = stripped != "endef"
            continue
        if re.match(r"(?:override\s+|export\s+)?define\b", stripped):
            in_define = True
            continue
        if line.startswith("\t") or not stripped or stripped.startswith("#"):
            continue
        if re.match(r"-?include\b|sinclude\b", stripped):
            is_open = True
            continue
        if compiled(_MAKE_ASSIGN).match(line) and not _MAKE_RULE_RE.match(line):
            continue
        m = _MAKE_RULE_RE.match(line)
        if m is None:
            continue
        # `target: VAR := value` is a rule; `VAR := x` was caught above.
        targets = m.group(1).split()
        if any("$" in t for t in targets):
            is_open = True
            continue
        for t in targets:
            if t == "%" or t == ".DEFAULT":
                is_open = True
            elif "%" in t:
                patterns.append(t)
            elif t == ".PHONY":
                rest = line[m.end() :].split("#", 1)[0]
                names.update(rest.split())
            elif not t.startswith("."):
                names.add(t)
    return MakeTargets(frozenset(names), tuple(patterns), is_open)


# A recipe's name; what follows it up to the line's first colon is its parameters.
_JUST_NAME = r"@?([A-Za-z_][A-Za-z0-9_-]*)\b"
_JUST_ALIAS = r"^alias\s+([A-Za-z_][A-Za-z0-9_-]*)\s*:="
_JUST_OPENING = r"^(?:import|mod)\b|^set\s+fallback\b"


def _just_recipe_name(line: str) -> str | None:
    """The recipe a justfile line starts (``name params...: deps``), or ``None``.

    Read with ``str.find``, not one regex: the regex this replaces nested a repeated
    group in a repeated group and took exponential time on a line like ``a=====...``.
    """
    colon = line.find(":")
    if colon < 0 or line.startswith("=", colon + 1):
        return None  # not a rule, or `name := value`
    m = compiled(_JUST_NAME).match(line, 0, colon)
    return None if m is None else m.group(1)


def just_recipes(text: str) -> MakeTargets:
    """The recipes (and aliases) a justfile defines; ``open`` when it imports, has
    modules, or falls back to a parent justfile."""
    names: set[str] = set()
    is_open = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line or line[0] in " \t#[":
            continue
        if compiled(_JUST_OPENING).match(line):
            is_open = True
            continue
        alias = compiled(_JUST_ALIAS).match(line)
        if alias is not None:
            names.add(alias.group(1))
            continue
        if re.match(r"^(?:export\s+)?[A-Za-z_][A-Za-z0-9_-]*\s*:=", line) or line.startswith(
            "set "
        ):
            continue
        name = _just_recipe_name(line)
        if name is not None:
            names.add(name)
    return MakeTargets(frozenset(names), (), is_open)


@record
class PackageInfo:
    """What a ``package.json`` says that matters here."""

    scripts: frozenset[str]
    workspaces: tuple[str, ...]
    """Its ``workspaces`` globs (a list, or ``{"packages": [...]}``)."""
    dependencies: frozenset[str]
    """Names in dependencies, devDependencies, optionalDependencies, peerDependencies."""


def package_info(text: str) -> PackageInfo | None:
    """A ``package.json``'s scripts, workspaces and dependencies; ``None`` when it is
    not a JSON object (then its scripts are unknown, and nothing is judged by them)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    scripts = data.get("scripts")
    names = frozenset(k for k in scripts) if isinstance(scripts, dict) else frozenset()
    raw = data.get("workspaces")
    if isinstance(raw, dict):
        raw = raw.get("packages")
    workspaces = tuple(w for w in raw if isinstance(w, str)) if isinstance(raw, list) else ()
    deps: set[str] = set()
    for key in ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies"):
        value = data.get(key)
        if isinstance(value, dict):
            deps.update(k for k in value if isinstance(k, str))
    return PackageInfo(names, workspaces, frozenset(deps))


def _pnpm_item(line: str) -> str | None:
    """The glob of a ``  - 'glob'  # comment`` line (quotes optional, none inside), or
    ``None``. Cut with ``str`` methods: a regex with a lazy group before ``\\s*`` took
    quadratic time on a long line of spaces."""
    dash = line.lstrip()
    if not dash.startswith("-") or len(dash) < 2 or not dash[1].isspace():
        return None
    value = dash[1:].split("#", 1)[0].strip()
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        value = value[1:-1]
    if not value.strip() or "'" in value or '"' in value:
        return None
    return value


def pnpm_workspace_globs(text: str) -> tuple[str, ...]:
    """The ``packages:`` globs of a ``pnpm-workspace.yaml`` (a plain block list; anything
    fancier gives what could be read)."""
    out: list[str] = []
    inside = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            inside = line.split("#", 1)[0].strip() == "packages:"
            continue
        glob = _pnpm_item(line) if inside else None
        if glob is not None:
            out.append(glob)
    return tuple(out)


@record
class ProjectSnapshot:
    """What is on disk, as the shell last saw it (refreshed from watched-file events).

    ``paths`` are the relative POSIX paths of every file and folder the project
    search visits (it skips :func:`skipped_folder` folders); ``root_entries`` every
    name at the root, skipped or not. A mention whose first component is a skipped
    folder (``node_modules/x``, ``.claude/x``) cannot be judged from it and is not.
    """

    root_entries: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()
    packages: tuple[PackageInfo, ...] | None = None
    """The root's ``package.json`` and its workspace packages'; ``None``: no package.json
    (or the root's cannot be read), so package scripts are not judged."""
    make: MakeTargets | None = None
    """``None``: no Makefile at the root."""
    just: MakeTargets | None = None
    """``None``: no justfile at the root."""
    binaries: frozenset[str] = frozenset()
    """Names in ``node_modules/.bin`` the shell saw (a shorthand may run them)."""
    _by_name: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    """The paths by their last component (made from ``paths``; not compared, not shown)."""

    def __init__(
        self,
        root_entries: frozenset[str] = frozenset(),
        paths: frozenset[str] = frozenset(),
        packages: tuple[PackageInfo, ...] | None = None,
        make: MakeTargets | None = None,
        just: MakeTargets | None = None,
        binaries: frozenset[str] = frozenset(),
        _by_name: object = None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "root_entries", root_entries)
        setter(self, "paths", paths)
        setter(self, "packages", packages)
        setter(self, "make", make)
        setter(self, "just", just)
        setter(self, "binaries", binaries)
        index: dict[str, list[str]] = {}
        for p in paths:
            index.setdefault(p.rsplit("/", 1)[-1], []).append(p)
        setter(self, "_by_name", {k: tuple(v) for k, v in index.items()})

    def __repr__(self) -> str:
        return (
            f"ProjectSnapshot(root_entries={self.root_entries!r}, paths={self.paths!r}, "
            f"packages={self.packages!r}, make={self.make!r}, just={self.just!r}, "
            f"binaries={self.binaries!r})"
        )

    def ends_with(self, rel: str) -> bool:
        """Whether some path in the project ends with ``rel`` (whole components)."""
        named = self._by_name.get(rel.rsplit("/", 1)[-1])
        if not named:
            return False  # (the usual answer for a stale mention: no generator made)
        return any(p == rel or p.endswith("/" + rel) for p in named)

    def scripts(self) -> frozenset[str]:
        """Every script any package defines."""
        return frozenset().union(*(p.scripts for p in self.packages or ()))

    def dependencies(self) -> frozenset[str]:
        """Every dependency any package names."""
        return frozenset().union(*(p.dependencies for p in self.packages or ()))


# -- mentions -> findings ------------------------------------------------------------------


def path_is_stale(mention: str, project: ProjectSnapshot) -> Literal["root", "anywhere"] | None:
    """Which rule finds ``mention`` missing, or ``None`` (present, or not checked)."""
    parts = mention.split("/")
    rel = mention
    if "" in parts or "." in parts:  # (the common mention has neither: kept as it is)
        parts = [p for p in parts if p not in ("", ".")]
        if not parts:
            return None
        rel = "/".join(parts)
    if parts[0] in project.root_entries:
        if skipped_folder(parts[0]):
            return None  # the snapshot does not see inside it
        return None if rel in project.paths else "root"
    if _EXTENSION_RE.search(parts[-1]) is None:
        return None
    return None if project.ends_with(rel) else "anywhere"


def script_is_stale(mention: Mention, project: ProjectSnapshot) -> bool:
    """Whether nothing in the project defines the script, target or recipe."""
    if mention.tool == "make":
        return project.make is not None and not project.make.defines(mention.text)
    if mention.tool == "just":
        return project.just is not None and not project.just.defines(mention.text)
    if project.packages is None:
        return False
    if mention.text in project.scripts():
        return False
    maybe_binary = (
        mention.text in project.binaries
        or mention.text in project.dependencies()
        or mention.text in WELL_KNOWN_BINARIES
    )
    return not (mention.binary_ok and maybe_binary)


def _script_message(m: Mention) -> str:
    if m.tool == "make":
        return f"`make {m.text}`: the Makefile has no target {m.text}."
    if m.tool == "just":
        return f"`just {m.text}`: the justfile has no recipe {m.text}."
    return f"`{m.tool} {m.text}`: no package.json in the project defines script {m.text}."


def note_mentions(text: str) -> tuple[Mention, ...]:
    """A note's path and script mentions: the part worth caching per note (by its text)."""
    return tuple(path_mentions(text)) + tuple(script_mentions(text))


def stale_mentions(
    text: str, mentions: Iterable[Mention], project: ProjectSnapshot
) -> list[tuple[Mention, str]]:
    """Each stale mention with its message (``text`` is the note the mentions came from)."""
    out: list[tuple[Mention, str]] = []
    gone = None
    for m in mentions:
        if m.kind == "path":
            rule = path_is_stale(m.text, project)
            if rule is None:
                continue
            if gone is None:
                gone = says_gone(text)
            if gone:
                continue
            where = (
                "does not exist in the project"
                if rule == "root"
                else "matches no file in the project"
            )
            # Escaped: the mention is raw note text (an ESC or a bidi control would reach
            # the terminal or the model that reads the message).
            out.append((m, f"`{escape_unseen(m.text)}` {where}."))
        elif script_is_stale(m, project):
            out.append((m, _script_message(m)))
    return out


def stale_note_findings(
    b: Bullet, stale: Sequence[tuple[Mention, str]], project: ProjectSnapshot
) -> list[Finding]:
    """The ``stale-path`` / ``stale-script`` findings of one note, from its stale mentions
    (:func:`stale_mentions` of its text, which a caller may have cached), each on the
    mention itself."""
    out: list[Finding] = []
    for m, message in stale:
        start, end = b.start + m.start, b.start + m.end
        if m.kind == "path":
            rule = path_is_stale(m.text, project) or "anywhere"
            data: StalePathData | StaleScriptData = StalePathData(
                note=b.note, mention=m.text, rule=rule
            )
            code = "stale-path"
        else:
            data = StaleScriptData(note=b.note, tool=m.tool, script=m.text)
            code = "stale-script"
        out.append(Finding(code, b.line, start, b.line, end, message, data))
    return out


def stale_findings(
    bullets: Sequence[Bullet], lines: Sequence[str], project: ProjectSnapshot
) -> list[Finding]:
    """``stale-path`` and ``stale-script`` findings of a project store's notes, each on
    the stale mention itself: :func:`stale_note_findings` of :func:`stale_mentions` of
    :func:`note_mentions`, note after note, in the order of ``bullets``.

    Found for the whole store at once (``check`` runs it on thousands of notes, of which
    a store in a fresh checkout may mention paths in a third, all stale): the words with a
    slash and the notes with a tool's name by one search each over the notes joined by
    newlines (no word spans one, and a newline is whitespace as a note's ends are), each
    distinct word read and judged once, and only the notes that hold a stale path asked
    whether they say it is gone. A note with a backtick (code spans) or a tool's name is
    read by :func:`path_mentions` / :func:`script_mentions` themselves.
    ``tests/unit/test_stale.py`` holds it to the note-by-note way.
    """
    count = len(lines)
    notes = [b for b in bullets if b.note and b.line < count]  # (b.note: not blank)
    if not notes:
        return []
    texts = [lines[b.line][b.start : b.end] for b in notes]
    joined = "\n".join(texts)
    if joined.count("\n") != len(texts) - 1:  # a note of several lines (not a file's)
        return _stale_findings_each(notes, texts, project)
    starts = list(itertools.accumulate([len(t) + 1 for t in texts[:-1]], initial=0))
    at = functools.partial(bisect.bisect_right, starts)
    ticked = {at(m.start()) - 1 for m in _TICKED_NOTE_RE.finditer(joined)} if "`" in joined else ()
    # Each note's path mentions (start, end, text) in text order: the words with a slash
    # of the notes without a backtick, read here; a note with one is read by path_mentions.
    paths: dict[int, list[tuple[int, int, str]]] = {}
    bare: list[int] = []
    for m in _SLASHED_NOTE_RE.finditer(joined):
        i = at(m.start()) - 1
        if i not in ticked:
            bare.append(i)
            continue
        found = [(x.start, x.end, x.text) for x in path_mentions(texts[i])]
        if found:
            paths[i] = found
    # The notes with a slash, each after a newline: a word with a slash is a match of
    # _SPACED_SLASH_WORD_RE (the whitespace before it, then it), found in one pass in C.
    held = "".join(["\n" + texts[i] for i in bare])
    held_starts = list(itertools.accumulate([len(texts[i]) + 1 for i in bare[:-1]], initial=0))
    held_at = functools.partial(bisect.bisect_right, held_starts)
    read: dict[str, tuple[int, str] | None] = {}  # a word as found -> (lead, mention)
    bad = _SPACE_OR_FORBIDDEN.search
    for m in _SPACED_SLASH_WORD_RE.finditer(held):
        raw = m.group(1)
        got = read.get(raw, _UNREAD)
        if got is _UNREAD:
            word = raw.lstrip("(")
            lead = len(raw) - len(word)
            word = word.rstrip(_TRAILING)
            # is_path_mention(word), written out: the word holds a slash (neither trim takes
            # it), so it is not empty, and it has no whitespace.
            got = read[raw] = (
                (lead, word)
                if "://" not in word
                and bad(word) is None
                and not word.startswith(("/", "-", "@", ".."))
                else None
            )
        if got is None:
            continue
        space = m.start()  # the whitespace before the word (its note's newline before the first)
        k = held_at(space) - 1
        begin = space - held_starts[k] + got[0]
        held_paths = paths.get(bare[k])
        if held_paths is None:
            paths[bare[k]] = [(begin, begin + len(got[1]), got[1])]
        else:
            held_paths.append((begin, begin + len(got[1]), got[1]))
    # The bare notes that may say a path is gone: only they are searched with _GONE.
    hinted = {bare[held_at(m.start()) - 1] for m in _GONE_HINT_RE.finditer(held)}
    tooled = _tooled_notes(joined, texts, starts, ticked)
    rules: dict[str, Literal["root", "anywhere"] | None] = {}
    messages: dict[str, str] = {}
    out: list[Finding] = []
    for i in sorted(paths.keys() | tooled) if tooled else sorted(paths):
        b, text = notes[i], texts[i]
        gone = None
        for start, end, word in paths.get(i, ()):
            rule = (
                rules[word]
                if word in rules
                else rules.setdefault(word, path_is_stale(word, project))
            )
            if rule is None:
                continue
            if gone is None:
                gone = (i in ticked or i in hinted) and compiled(_GONE).search(text) is not None
            if gone:
                break  # the note says so: none of its paths is stale
            message = messages.get(word)
            if message is None:
                where = (
                    "does not exist in the project"
                    if rule == "root"
                    else "matches no file in the project"
                )
                message = messages[word] = f"`{escape_unseen(word)}` {where}."
            data: StalePathData = {"note": b.note, "mention": word, "rule": rule}
            out.append(
                Finding("stale-path", b.line, b.start + start, b.line, b.start + end, message, data)
            )
        if i in tooled:
            for script in script_mentions(text):
                if script_is_stale(script, project):
                    stale = [(script, _script_message(script))]
                    out.extend(stale_note_findings(b, stale, project))
    return out


_UNREAD = (-1, "")
"""A word :func:`stale_findings` has not read yet."""
_TICKED_NOTE_RE = re.compile(r"`[^\n]*")
"""A note's text from its first backtick on, in the notes joined by newlines."""
_SLASHED_NOTE_RE = re.compile(r"/[^\n]*")
"""A note's text from its first slash on (a literal first: ``re`` looks for it in C)."""
_SPACED_SLASH_WORD_RE = re.compile(r"\s([^\s/]*/\S*)")
""":data:`_SLASH_WORD_RE` in text where each word has a whitespace before it: the
whitespace, then the word (without the look-behind tried at every position: ~25%
faster)."""
_GONE_HINT_RE = re.compile(r"[dDmMnNrR](?i:emoved|eleted|enamed|oved|o longer|ot used)")
"""What every match of :data:`_GONE` holds (its first letter has no other case under
``IGNORECASE``, so it is written out): a literal set first, which ``re`` looks for in C
(~2.5x faster over the notes than :data:`_GONE`, whose ``\\b`` and case-blind
alternatives are tried at every position)."""
_TOOL_RE = re.compile(r"(?:pnpm|npm|yarn|bun|make|just)(?![^\s`])")
""":data:`_TOOL_WORD_RE` but for the look behind, which a caller makes (a look-behind
first is tried at every position, and so is an optional first character: each ~4x
slower over a whole store than these literals)."""


def _tooled_notes(
    joined: str, texts: Sequence[str], starts: Sequence[int], ticked: Container[int]
) -> set[int]:
    """The notes (indices in ``texts``, which ``joined`` holds joined by newlines and
    start at ``starts``) that :func:`script_mentions` may find a script in.

    Those with a tool's name as a word (:data:`_TOOL_WORD_RE`, lowercased), but, in a note
    without a backtick (no code span): not a ``just`` (a command only in code), nor a
    ``make`` whose word before it is no run word (SPEC §13's prose rule: "make sure"),
    nor a package manager without a ``run`` word after it (a shorthand is a command only
    in code)."""
    low = joined.lower()
    if len(low) != len(joined):  # (U+0130 lowercases to two characters: other offsets)
        return {i for i, t in enumerate(texts) if _TOOL_WORD_RE.search(t.lower())}
    out: set[int] = set()
    for m in _TOOL_RE.finditer(low):
        start = m.start()
        if start and not (low[start - 1].isspace() or low[start - 1] == "`"):
            continue  # inside a word ("bundle" holds "bun"; the newline between notes is a space)
        i = bisect.bisect_right(starts, start) - 1
        if i in out:
            continue
        tool = m.group()
        if i not in ticked:
            if tool == "just":
                continue
            end = starts[i + 1] - 1 if i + 1 < len(starts) else len(low)
            if tool == "make":
                before = low[starts[i] : start].split()
                if not before or before[-1] not in _PROSE_RUN_WORDS:
                    continue
            elif _NPM_RUN_WORDS.isdisjoint(low[m.end() : end].split()):
                continue
        out.add(i)
    return out


def _stale_findings_each(
    notes: Sequence[Bullet], texts: Sequence[str], project: ProjectSnapshot
) -> list[Finding]:
    """:func:`stale_findings` note by note (``texts``: each note's text on its line)."""
    out: list[Finding] = []
    for b, text in zip(notes, texts, strict=True):
        if "/" not in text and _ANY_TOOL.search(text.lower()) is None:
            continue  # no path (no slash) and no script (no tool)
        out.extend(
            stale_note_findings(b, stale_mentions(text, note_mentions(text), project), project)
        )
    return out
