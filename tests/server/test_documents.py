"""The editor's incremental document state always equals a fresh parse of its text.

A lone CR is left out of the alphabet: a buffer whose line ends in CR, followed by
the document's LF, reads differently after a fresh split (CRLF); see docs/lsp.md.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.server.documents import MemoryDocument, Span
from memory_ls.server.positions import to_client

PIECES = st.sampled_from(
    [
        "- ",
        "-  ",
        "* ",
        "  - ",
        "\t* ",
        "note",
        "Note.",
        "dup",
        "Dup!",
        "😀",
        "日本語",
        "\u200b",
        "\x07",
        " ",
        "\t",
        "\n",
        "\r\n",
        "x" * 30,
        "prose",
        "<!-- h -->",
    ]
)
TEXT = st.lists(PIECES, max_size=40).map("".join)


def fresh_state(doc: MemoryDocument) -> tuple[object, ...]:
    fresh = MemoryDocument(doc.uri, doc.path, doc.text(), doc.version)
    return state_of(fresh)


def state_of(doc: MemoryDocument) -> tuple[object, ...]:
    return (
        doc.lines,
        doc.bullets,
        doc.key_lines,
        doc.dup_keys,
        doc.found,
        doc.notes(),
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data(), start=TEXT, encoding=st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_incremental_edits_equal_a_fresh_parse(
    data: st.DataObject, start: str, encoding: str
) -> None:
    doc = MemoryDocument("file:///p/.pi/memory.md", Path("/p/.pi/memory.md"), start, 1)
    for step in range(data.draw(st.integers(1, 8))):
        lines = doc.lines
        line = data.draw(st.integers(0, len(lines) - 1))
        end_line = data.draw(st.integers(line, min(len(lines) - 1, line + 2)))
        char = data.draw(st.integers(0, len(lines[line])))
        end_char = data.draw(st.integers(0, len(lines[end_line])))
        if end_line == line and end_char < char:
            char, end_char = end_char, char
        new_text = data.draw(TEXT)
        span = Span(
            line,
            to_client(lines[line], char, encoding),
            end_line,
            to_client(lines[end_line], end_char, encoding),
        )
        doc.apply_change(span, new_text, encoding)
        doc.version = step + 2
        assert state_of(doc) == fresh_state(doc)
