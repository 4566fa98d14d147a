"""The read verbs' plain arguments are read without argparse, exactly as argparse reads them.

``cli._simple_args`` reads the arguments of ``inject``, ``list``, ``path``, ``doctor`` and ``check``
when they are plain (issue 11: argparse and what building a parser imports are a tenth
of ``inject``'s time) and gives up on anything else, which argparse then reads as before.
Where it reads, it must give argparse's namespace, field for field.
"""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from memory_ls import cli

TOKENS = [
    *("--json", "--trusted", "--untrusted", "--project", "--agent-dir", "--scope"),
    *("project", "global", "/p", "a=b", "x y", "-x", "--", "", "-h", "--help", "--bogus"),
    *("--project=/q", "--agent-dir=", "--scope=global", "--scope=nope", "--json=1", "--proj"),
    *("--to", "--yes", "é", "--project=-p"),
    *("--format", "sarif", "json", "--format=text", "--format=xml", "store.md"),
]


def argparse_reading(tokens: list[str], verb: cli.Verb) -> dict[str, object] | None:
    """argparse's namespace for ``tokens``, as ``cli.main`` reads them; ``None`` if it exits."""
    parser = cli._verb_parser(verb)
    parser.exit = lambda status=0, message=None: (_ for _ in ()).throw(SystemExit(status))  # type: ignore[method-assign]
    parser.print_usage = lambda file=None: None  # type: ignore[method-assign]
    try:
        return vars(cli._restore(parser.parse_args(cli._arrange(tokens, verb))))
    except SystemExit:
        return None


@examples(max_examples=600, deadline=None)
@given(
    verb=st.sampled_from(cli.SIMPLE_VERBS),
    tokens=st.lists(st.sampled_from(TOKENS), max_size=6),
)
def test_a_plain_reading_is_argparses_reading(verb: str, tokens: list[str]) -> None:
    simple = cli._simple_args(tokens, cli.VERBS[verb])
    if simple is not None:
        assert vars(simple) == argparse_reading(tokens, cli.VERBS[verb])


@pytest.mark.parametrize(
    ("verb", "tokens"),
    [
        ("inject", []),
        ("inject", ["--project", "/p", "--agent-dir", "/a"]),
        ("list", ["--json", "--project=/p", "--scope", "global", "--untrusted"]),
        ("path", ["--trusted", "--json"]),
        ("doctor", ["--agent-dir", "a=b"]),
        ("check", []),
        ("check", ["--format", "sarif", "--project", "/p"]),
        ("check", ["--json"]),
    ],
)
def test_what_agents_run_is_read_without_argparse(verb: str, tokens: list[str]) -> None:
    simple = cli._simple_args(tokens, cli.VERBS[verb])
    assert simple is not None
    assert vars(simple) == argparse_reading(tokens, cli.VERBS[verb])


@pytest.mark.parametrize(
    ("verb", "tokens"),
    [
        ("inject", ["-h"]),
        ("inject", ["--project"]),
        ("inject", ["--trusted", "--untrusted"]),
        ("list", ["--scope", "nope"]),
        ("list", ["--json", "--json"]),
        ("inject", ["--", "x"]),
        ("add", ["x"]),
        ("check", ["store.md"]),
        ("check", ["--format", "xml"]),
    ],
)
def test_anything_else_is_left_to_argparse(verb: str, tokens: list[str]) -> None:
    assert cli._simple_args(tokens, cli.VERBS[verb]) is None


def test_the_namespace_is_what_the_verbs_read() -> None:
    simple = cli._simple_args(["--project", "/p"], cli.VERBS["list"])
    assert simple is not None
    assert not isinstance(simple, argparse.Namespace)  # a SimpleNamespace: no argparse
    assert (simple.project, simple.scope, simple.json, simple.trusted) == (
        "/p",
        "project",
        False,
        None,
    )
