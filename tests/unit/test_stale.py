"""``stale-path`` and ``stale-script`` as pure functions (SPEC §13): what a mention is,
which words make a script reference, how the project's files are read, and the findings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core.notes import parse_lines
from memory_ls.core.stale import (
    _EXTENSION_RE,
    MakeTargets,
    PackageInfo,
    ProjectSnapshot,
    just_recipes,
    make_targets,
    note_mentions,
    package_info,
    path_is_stale,
    path_mentions,
    pnpm_workspace_globs,
    script_mentions,
    skipped_folder,
    stale_findings,
    stale_mentions,
    stale_note_findings,
)


def paths(text: str) -> list[str]:
    return [m.text for m in path_mentions(text)]


def scripts(text: str) -> list[tuple[str, str]]:
    return [(m.tool, m.text) for m in script_mentions(text)]


# -- path mentions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("Config lives in src/config.ts.", ["src/config.ts"]),
        ("See (docs/setup.md), then run it", ["docs/setup.md"]),
        ("Entry point is `app/main.py`", ["app/main.py"]),
        ("Read docs/a.md; then docs/b.md!", ["docs/a.md", "docs/b.md"]),
        ("Tests: tests/unit/", ["tests/unit/"]),
        ("Use and/or as you like", ["and/or"]),  # a mention; not *checked* (no extension)
        ("Fork anthropics/claude-code", ["anthropics/claude-code"]),
    ],
)
def test_path_mentions(note: str, expected: list[str]) -> None:
    assert paths(note) == expected


@pytest.mark.parametrize(
    "note",
    [
        "Docs at https://example.com/docs/a.md",
        "Logs go to /var/log/app.log",
        "Pass -o/dev/null",
        "Scoped package @types/node",
        "Up a level: ../shared/x.py",
        "Glob src/**/*.ts",
        "Template {name}/index.ts",
        "Home is ~/notes/todo.md",
        "Use $HOME/bin/tool.sh",
        "`npm run build` builds it",  # a span with whitespace is not a path
        "A single word",
        "50%/day",
    ],
)
def test_not_path_mentions(note: str) -> None:
    assert paths(note) == []


def test_mention_positions_select_the_path() -> None:
    note = "Edit (src/app.ts), and `lib/util.py`."
    for m in path_mentions(note):
        assert note[m.start : m.end] == m.text


PROJECT = ProjectSnapshot(
    root_entries=frozenset({"src", "docs", "README.md", "node_modules", ".claude", "package.json"}),
    paths=frozenset(
        {"src", "src/app.ts", "src/core", "src/core/checks.py", "docs", "docs/setup.md"}
    ),
)


@pytest.mark.parametrize(
    ("mention", "verdict"),
    [
        ("src/app.ts", None),
        ("src/gone.ts", "root"),
        ("src/core/", None),
        ("src/nothing/", "root"),
        ("./src/app.ts", None),
        ("core/checks.py", None),  # ends a path
        ("ore/checks.py", "anywhere"),  # whole components only
        ("lib/helpers.py", "anywhere"),
        ("owner/repo", None),  # not checked: first component not at root, no extension
        ("and/or", None),
        ("python/3.11", None),  # a version, not an extension
        ("node_modules/x/index.js", None),  # the snapshot does not see inside skipped folders
        (".claude/settings.json", None),
    ],
)
def test_path_is_stale(mention: str, verdict: str | None) -> None:
    assert path_is_stale(mention, PROJECT) == verdict


def test_skipped_folders() -> None:
    for name in (".git", "node_modules", "__pycache__", "dist", "build", "target", ".venv", ".x"):
        assert skipped_folder(name)
    assert skipped_folder("env", has_pyvenv_cfg=True)
    for name in (".github", ".pi", "src", "env"):
        assert not skipped_folder(name)


# -- script mentions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("Run npm run build before pushing", [("npm", "build")]),
        ("npm run-script lint:fix.", [("npm", "lint:fix")]),
        ("Use `npm run -w web dev` for the frontend", [("npm", "dev")]),
        ("pnpm run test:e2e needs the server up", [("pnpm", "test:e2e")]),
        ("Always `pnpm typecheck` first", [("pnpm", "typecheck")]),
        ("`pnpm --filter api build`", [("pnpm", "build")]),
        ("`yarn lint` before committing", [("yarn", "lint")]),
        ("yarn run storybook", [("yarn", "storybook")]),
        ("bun run dev starts vite", [("bun", "dev")]),
        ("Run `make test` locally", [("make", "test")]),
        ("run make lint before a PR", [("make", "lint")]),
        ("`make V=1 build`", [("make", "build")]),
        ("`make -j 4 test`", []),  # not judged rather than misread
        ("`cargo fmt && just ci`", [("just", "ci")]),
        ("`just`", []),
        ("Make sure to run tests", []),
        ("Just run it again", []),
        ("make the build green", []),
        ("use pnpm for everything", []),
        ("`pnpm install` then `pnpm add -D vitest`", []),
        ("`yarn add lodash`", []),
        ("`yarn workspace web build`", []),  # another package's script: not judged
        ("`pnpm dlx create-vite`", []),
        ("bun run src/index.ts", []),
        ("`make -C docs html`", []),  # another folder's Makefile
        ("`just --justfile ci.just lint`", []),
        ("`npm install` and `npm ci`", []),
        ("`npm run`", []),
        ("`pnpm run --if-present lint`", []),  # a missing script is no error
        ("`npm run lint --if-present`", []),
        ("`npm run $SCRIPT`", []),
    ],
)
def test_script_mentions(note: str, expected: list[tuple[str, str]]) -> None:
    assert scripts(note) == expected


SCRIPTS = ProjectSnapshot(
    root_entries=frozenset({"package.json", "Makefile", "justfile"}),
    packages=(
        PackageInfo(frozenset({"build", "lint"}), ("packages/*",), frozenset({"vitest"})),
        PackageInfo(frozenset({"dev"}), (), frozenset()),
    ),
    make=MakeTargets(frozenset({"test"})),
    just=MakeTargets(frozenset({"ci"})),
)


def finding_codes(note: str, project: ProjectSnapshot) -> list[tuple[str, str]]:
    lines = [f"- {note}"]
    found = stale_findings(parse_lines(lines).bullets, lines, project)
    for f in found:
        assert lines[0][f.start : f.end] in note
    return [(f.code, lines[0][f.start : f.end]) for f in found]


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("`npm run build` then `npm run dev`", []),  # dev is a workspace package's
        ("`npm run deploy` ships it", [("stale-script", "deploy")]),
        ("`yarn vitest` runs the tests", []),  # a dependency's binary
        ("`yarn jest`", []),  # a well-known binary
        ("`yarn release`", [("stale-script", "release")]),
        ("`make test` and `make bench`", [("stale-script", "bench")]),
        ("`just ci` or `just fmt`", [("stale-script", "fmt")]),
    ],
)
def test_script_findings(note: str, expected: list[tuple[str, str]]) -> None:
    assert finding_codes(note, SCRIPTS) == expected


def test_no_package_json_no_makefile_no_findings() -> None:
    empty = ProjectSnapshot()
    assert finding_codes("`npm run deploy`, `make bench`, `just fmt`", empty) == []


def test_path_findings_and_gone_notes() -> None:
    assert finding_codes("Handlers are in src/old.ts", PROJECT) == [("stale-path", "src/old.ts")]
    assert finding_codes("src/old.ts was renamed to src/app.ts", PROJECT) == []
    assert finding_codes("lib/legacy.py is no longer used", PROJECT) == []
    assert finding_codes("See docs/setup.md and src/app.ts", PROJECT) == []


def test_finding_data() -> None:
    lines = ["  * Run `npm run deploy` after src/gone.ts"]
    project = ProjectSnapshot(
        root_entries=frozenset({"src"}), packages=(PackageInfo(frozenset(), (), frozenset()),)
    )
    found = stale_findings(parse_lines(lines).bullets, lines, project)
    assert [(f.code, f.data) for f in found] == [
        ("stale-script", {"note": lines[0][4:], "tool": "npm", "script": "deploy"}),
        ("stale-path", {"note": lines[0][4:], "mention": "src/gone.ts", "rule": "root"}),
    ] or [(f.code, f.data) for f in found] == [
        ("stale-path", {"note": lines[0][4:], "mention": "src/gone.ts", "rule": "root"}),
        ("stale-script", {"note": lines[0][4:], "tool": "npm", "script": "deploy"}),
    ]


# -- the project's files -------------------------------------------------------------------


def test_package_info() -> None:
    info = package_info(
        '{"scripts": {"build": "tsc", "test:unit": "vitest"},'
        ' "workspaces": {"packages": ["apps/*", 3]},'
        ' "devDependencies": {"vitest": "^1"}, "dependencies": []}'
    )
    assert info == PackageInfo(
        frozenset({"build", "test:unit"}), ("apps/*",), frozenset({"vitest"})
    )
    assert package_info('{"workspaces": ["a"]}') == PackageInfo(frozenset(), ("a",), frozenset())
    for bad in ("", "[]", "{", '"x"', "[" * 100_000):
        assert package_info(bad) is None


def test_pnpm_workspace_globs() -> None:
    text = "packages:\n  - 'apps/*'\n  - \"packages/*\"  # all\n  - tools\ncatalog:\n  - x\n"
    assert pnpm_workspace_globs(text) == ("apps/*", "packages/*", "tools")


MAKEFILE = """\
.PHONY: all lint
VERSION := 1.0
CC ?= gcc
all: build test
build test: deps ## two targets
\t$(CC) -o app main.c
release: VERSION = 2.0
%.o: %.c
\tcc -c $<
docs/%.html: docs/%.md
define HELP
not-a-target: x
endef
ci:: ; echo ci
long \\
  continued: x
"""


def test_make_targets() -> None:
    targets = make_targets(MAKEFILE)
    assert targets.names == frozenset(
        {"all", "lint", "build", "test", "release", "ci", "long", "continued"}
    )
    assert not targets.open
    assert targets.defines("main.o") and targets.defines("docs/x.html")
    assert not targets.defines("not-a-target") and not targets.defines(".o")
    assert make_targets("include common.mk\nx:\n").open
    assert make_targets("$(BIN): x\n").open
    assert make_targets("%:\n\t@echo $@\n").open


JUSTFILE = """\
set dotenv-load
version := "1.0"
alias t := test

# build it
build target="debug":
    cargo build
@test *args: build
    cargo test {{args}}
[private]
_helper:
    true
export RUST_LOG := "info"
"""


def test_just_recipes() -> None:
    recipes = just_recipes(JUSTFILE)
    assert recipes.names == frozenset({"t", "build", "test", "_helper"})
    assert not recipes.open
    assert just_recipes("import 'ci.just'\n").open
    assert just_recipes("mod docs\n").open
    assert just_recipes("set fallback\n").open


# -- hostile text --------------------------------------------------------------------------

PIECES = [*"`/ .()-@~$*:;!?=&|\\\t\r\n\"'%ab1_", "\u202e", "😀", "\x00"]
HOSTILE = st.lists(
    st.sampled_from([*PIECES, "npm ", "run ", "pnpm ", "yarn ", "make ", "just ", "bun ", "-w "]),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_extraction_never_crashes_and_stays_inside(text: str) -> None:
    for m in note_mentions(text):
        assert 0 <= m.start <= m.end <= len(text)
        assert text[m.start : m.end] == m.text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parsers_never_crash(text: str) -> None:
    make_targets(text)
    just_recipes(text)
    package_info(text)
    pnpm_workspace_globs(text)
    note_mentions(text)


NOTHING_EXISTS = ProjectSnapshot(
    root_entries=frozenset({"a", "b"}),
    packages=(PackageInfo(frozenset(), (), frozenset()),),
    make=MakeTargets(frozenset()),
    just=MakeTargets(frozenset()),
)


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_findings_stay_on_their_mention(text: str) -> None:
    line = "  - " + text
    bullets = parse_lines([line]).bullets
    for f in stale_findings(bullets, [line], NOTHING_EXISTS):
        assert bullets[0].start <= f.start < f.end <= bullets[0].end
        assert line[f.start : f.end] in (f.data.get("mention"), f.data.get("script"))


def test_the_one_search_for_a_bad_character_is_the_per_character_rule() -> None:
    """``is_path_mention`` refuses a word with whitespace or a glob/shell character in one
    regex search: the same verdict as ``str.isspace`` or the set, for every code point."""
    from memory_ls.core import stale

    differ = [
        c
        for c in range(0x110000)
        if (stale._SPACE_OR_FORBIDDEN.search(chr(c)) is None)
        == (chr(c).isspace() or chr(c) in stale._FORBIDDEN)
    ]
    assert differ == []


TOOLISH = st.lists(
    st.sampled_from(
        [
            *PIECES,
            *("npm", "NPM", "pnpm", "Yarn", "bun", "bundle", "MAKE", "ma\u212ae", "just"),
            *("run", "\u0130", "\u00a0", "\u2028", " ", "`", "/"),
        ]
    ),
    max_size=30,
).map("".join)
"""Notes of tool names in every case (the Kelvin sign lowercases to "k"), glued to other
words or not, in code spans or not, with Unicode spaces and slashes."""


@settings(max_examples=500, deadline=None)
@given(TOOLISH)
def test_the_quick_looks_never_skip_a_mention(text: str) -> None:
    """``stale_findings`` passes over a note without a slash or a tool's name, and
    ``path_mentions`` reads only the words with a slash: shortcuts only. Every token the
    script reading takes for a tool is found by the searches, the words with a slash are
    every whitespace-separated word with one, and the findings are the long way's."""
    import re

    from memory_ls.core import stale

    low = text.lower()
    tools = {"npm", "pnpm", "yarn", "bun", "make", "just"}
    if any((t.text if t.in_code else t.text.lower()) in tools for t in stale._tokens(text)):
        assert stale._ANY_TOOL.search(low) and stale._TOOL_WORD_RE.search(low)
    words = [m.span() for m in re.finditer(r"\S+", text) if "/" in m.group()]
    assert [m.span() for m in stale._SLASH_WORD_RE.finditer(text)] == words
    line = "- " + text
    bullets = parse_lines([line]).bullets
    note = line[bullets[0].start : bullets[0].end] if bullets else ""
    long_way = [
        f
        for b in bullets
        if not b.blank
        for f in stale_note_findings(
            b, stale_mentions(note, note_mentions(note), NOTHING_EXISTS), NOTHING_EXISTS
        )
    ]
    assert stale_findings(bullets, [line], NOTHING_EXISTS) == long_way


def test_a_word_that_holds_a_tool_s_name_is_no_tool() -> None:
    assert scripts("Bundle with `make build` then bundle again") == [("make", "build")]
    assert scripts("the bundler and the makefile, just in case") == []
    assert scripts("`MA\u212aE build`") == []  # in code the tool is taken as written
    assert scripts("run MA\u212aE build") == [("make", "build")]  # in prose, lowercased


def _note_by_note(lines: list[str], project: ProjectSnapshot) -> list[object]:
    """SPEC §13's rule as written: each note's mentions, judged, one note after another."""
    out: list[object] = []
    for b in parse_lines(lines).bullets:
        if b.blank:
            continue
        note = lines[b.line][b.start : b.end]
        out += stale_note_findings(b, stale_mentions(note, note_mentions(note), project), project)
    return out


STORE_PIECES = [
    *PIECES,
    *("npm ", "NPM ", "pnpm ", "Yarn ", "bun ", "bundle ", "MAKE ", "ma\u212ae ", "just "),
    *("run ", "run-script ", "rum ", "use ", "Run ", "make ", "make sure ", "\u0130 ", "\u017f"),
    *("src/app.ts ", "(lib/x.py), ", "docs/gone.md. ", "a/b ", "/abs/x.md ", "`src/old.ts` "),
    *("was removed ", "REMOVED ", "re\u017fmoved ", "no longer used ", "renamed ", "moved"),
    *("\u00a0", "\u2028", "\u3000", " ", "  ", "\r", "😀/é.md ", "-w ", "&& ", "$ ", "build "),
    *("npm run deploy ", "npm rum deploy ", "npm urn x ", "pnpm run x ", "yarn run x "),
    *("`yarn x` ", "`pnpm x` "),
    *("run make x ", "use MAKE x ", "Via make x ", "make x ", "`make x` ", "`just x` ", "just x "),
    *("bun run x ", "npm -w a run x ", "npm RUN x ", "x\u017fmake x ", "makex ", "run\tmake x "),
]
STORE_LINE = st.one_of(
    st.lists(st.sampled_from(STORE_PIECES), max_size=12).map("".join).map(lambda t: "- " + t),
    st.lists(st.sampled_from(STORE_PIECES), max_size=8).map("".join).map(lambda t: "  * " + t),
    st.sampled_from(["", "- ", "# Notes", "text src/x.ts not a bullet", "-\tsrc/tab.ts"]),
    HOSTILE.map(lambda t: "- " + t),
    TOOLISH.map(lambda t: "- " + t),
)
STALE_PROJECTS = [
    NOTHING_EXISTS,
    ProjectSnapshot(),
    PROJECT,
    SCRIPTS,
    ProjectSnapshot(
        root_entries=frozenset({"src", "lib", "package.json", "Makefile"}),
        paths=frozenset({"src", "src/app.ts", "lib", "lib/x.py"}),
        packages=(PackageInfo(frozenset({"build"}), (), frozenset()),),
        make=MakeTargets(frozenset({"sure", "build"})),
    ),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(STORE_LINE, max_size=14), st.sampled_from(STALE_PROJECTS))
def test_the_whole_store_pass_is_the_note_by_note_rule(
    lines: list[str], project: ProjectSnapshot
) -> None:
    """``stale_findings`` reads the whole store at once (one search for the words with a
    slash, one for the tools' names, one for the words that say a path is gone, each word
    judged once): its findings, their order included, are the note-by-note rule's, on
    stores of many notes, blank bullets and other lines, in any project."""
    bullets = parse_lines(lines).bullets
    assert stale_findings(bullets, lines, project) == _note_by_note(lines, project)


def test_the_whole_store_pass_on_notes_that_repeat_words() -> None:
    """Each distinct word is read and judged once: a word repeated in other notes, at other
    columns, with other trimming, still gives each note its own finding."""
    lines = [
        "- see src/gone.ts",
        "- (src/gone.ts) again, and src/gone.ts.",
        "- src/gone.ts was removed",
        "- `src/gone.ts` in code",
        "- run make sure then npm run deploy src/gone.ts",
        "- \u0130 src/gone.ts",
    ]
    project = ProjectSnapshot(
        root_entries=frozenset({"src", "package.json", "Makefile"}),
        packages=(PackageInfo(frozenset(), (), frozenset()),),
        make=MakeTargets(frozenset()),
    )
    found = stale_findings(parse_lines(lines).bullets, lines, project)
    assert found == _note_by_note(lines, project)
    gone = [
        f"- src/gone.ts {says} src/x.ts"
        for says in (
            *("removed", "Deleted", "RENAMED", "moved", "No Longer used", "no longer exist"),
            *("no longer exists", "no longer there", "no longer needed", "not used anymore"),
            *("NOT USED ANY MORE", "not u\u017fed any more"),  # (IGNORECASE: the long s is an s)
        )
    ]
    assert stale_findings(parse_lines(gone).bullets, gone, project) == []
    assert _note_by_note(gone, project) == []
    assert [(f.line, lines[f.line][f.start : f.end]) for f in found] == [
        (0, "src/gone.ts"),
        (1, "src/gone.ts"),
        (1, "src/gone.ts"),
        (3, "src/gone.ts"),
        (4, "src/gone.ts"),
        (4, "sure"),
        (4, "deploy"),
        (5, "src/gone.ts"),
    ]


def _path_is_stale_as_written(mention: str, project: ProjectSnapshot) -> str | None:
    """``path_is_stale`` as first written: the components always filtered and joined, and
    ``ends_with`` over every path of the last component's name."""
    parts = [p for p in mention.split("/") if p not in ("", ".")]
    if not parts:
        return None
    rel = "/".join(parts)
    if parts[0] in project.root_entries:
        if skipped_folder(parts[0]):
            return None
        return None if rel in project.paths else "root"
    if _EXTENSION_RE.search(parts[-1]) is None:
        return None
    last = rel.rsplit("/", 1)[-1]
    ends = any(p == rel or p.endswith("/" + rel) for p in project._by_name.get(last, ()))
    return None if ends else "anywhere"


MENTION_PIECES = ["src", "lib", "x.py", "app.ts", "", ".", "..", "/", "//", "./", "node_modules"]
MENTION_PIECES += ["gone.md", "3.11", "a", "Makefile", "package.json", ".git", "é.md", "😀"]


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from(MENTION_PIECES), min_size=1, max_size=6).map("/".join),
    st.sampled_from(STALE_PROJECTS),
)
def test_a_mention_is_judged_as_first_written(mention: str, project: ProjectSnapshot) -> None:
    """``path_is_stale`` keeps a mention without empty or ``.`` components whole, and
    ``ends_with`` makes no generator for a name no path has: the same verdicts."""
    assert path_is_stale(mention, project) == _path_is_stale_as_written(mention, project)
