"""Text rules shared by every layer: normalisation, the near-duplicate key, lengths.

Everything here is a pure function over ``str``. SPEC §2 defines the rules; the
comments say where Python's defaults differ from them.
"""

from __future__ import annotations

import re
from codecs import utf_8_decode
from pathlib import PurePath

from memory_ls.core.records import record

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"
"""The first line of a store that memory-ls (or Pi) creates."""

BOM = "\ufeff"
MAX_NOTE_UTF16 = 500
"""Notes longer than this many UTF-16 code units are refused (Pi counts in JS strings)."""

MAX_STORE_BYTES = 262_144
"""A store larger than this is refused for reading and writing."""

# C0 controls, DEL and C1 controls all become spaces (SPEC §2).
_CONTROLS = {c: " " for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]}
_CONTROL = "[\x00-\x1f\x7f-\x9f]"
# A lone surrogate cannot be written as UTF-8; JS writes it as U+FFFD, so do we.
_SURROGATE = "[\ud800-\udfff]"
NEEDS_REPLACING = "[\x00-\x1f\x7f-\x9f\ud800-\udfff]"
"""A character :func:`normalise` replaces (without one, it only folds whitespace); the
pattern's source, for :func:`compiled`."""

_COMPILED: dict[str, re.Pattern[str]] = {}


def compiled(source: str) -> re.Pattern[str]:
    """``re.compile(source)``, compiled when first asked for and kept.

    The patterns of this module are compiled when first used, not when it is
    imported: a class of code point ranges reaching past U+00FF (the surrogates,
    the hidden and unseen characters) is compiled through a 65,536-entry map in
    Python, and the five of them were ~15 million instructions, ~4 ms, of every
    ``memory-ls inject``, which needs none of them for a store that memory-ls or
    Pi wrote (its notes are normalised, its paths printable ASCII).
    """
    pattern = _COMPILED.get(source)
    if pattern is None:
        pattern = _COMPILED[source] = re.compile(source)
    return pattern


TRAILING_PUNCT = ".!?,;:"
"""Trailing punctuation a near-duplicate key drops."""

HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x061C, 0x061C),  # Arabic letter mark
    (0x180E, 0x180E),  # Mongolian vowel separator
    (0x200B, 0x200F),  # zero-width space, (non-)joiner, left-to-right and right-to-left marks
    (0x202A, 0x202E),  # bidirectional embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x2069),  # bidirectional isolates
    (0xFEFF, 0xFEFF),  # zero-width no-break space
    (0xE0000, 0xE007F),  # Unicode tags
)
"""Characters that hide text from a human reader but not from a model (``hidden-unicode``),
as inclusive code point ranges."""

UNSEEN_RANGES: tuple[tuple[int, int], ...] = tuple(
    sorted(
        (
            *HIDDEN_RANGES,
            (0x0000, 0x001F),  # C0 controls (line breaks among them)
            (0x007F, 0x009F),  # DEL and C1 controls
            (0x00AD, 0x00AD),  # soft hyphen
            (0x0600, 0x0605),  # Arabic number signs (format characters)
            (0x06DD, 0x06DD),
            (0x070F, 0x070F),
            (0x0890, 0x0891),
            (0x08E2, 0x08E2),
            (0x2028, 0x2029),  # line and paragraph separators
            (0x206A, 0x206F),  # deprecated format characters
            (0xFFF9, 0xFFFB),  # interlinear annotation
            (0x110BD, 0x110BD),
            (0x110CD, 0x110CD),
            (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
            (0x1BCA0, 0x1BCA3),  # shorthand format controls
            (0x1D173, 0x1D17A),  # musical symbol format characters
        )
    )
)
"""What a reader cannot see for what it is, as inclusive code point ranges: controls,
every format character (Unicode 15.1's category Cf: bidi, zero-width, tags, …) and the
line and paragraph separators. :func:`escape_unseen` escapes these (and lone
surrogates). The one definition: the VS Code client (``vscode-client/src/inbox.ts``)
and the Neovim helper (``editors/nvim/lua/memory_ls/init.lua``) hold copies, which
``tests/editors/test_hidden_characters.py`` checks against this one."""


def _class_of(ranges: tuple[tuple[int, int], ...]) -> str:
    """A regular expression character class matching ``ranges``."""
    return "[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges) + "]"


_HIDDEN = _class_of(HIDDEN_RANGES)
# A lone surrogate (a path byte that is not UTF-8) cannot be seen for what it is either.
_UNSEEN = _class_of((*UNSEEN_RANGES, (0xD800, 0xDFFF)))


def normalise(text: str) -> str:
    """Return ``text`` as a note: controls to spaces, whitespace runs to one space, trimmed."""
    if text.isprintable() and "  " not in text and text[:1] != " " != text[-1:]:
        # A note already (no control, no surrogate, no whitespace but single inner
        # spaces): the text itself, not an equal copy. A store's parsed notes then
        # share their bullets' strings (4,500 fewer on the bench's store, ~0.5 MB of them).
        return text
    # One C-speed scan decides whether the slow replacements are needed at all.
    note = text
    if compiled(NEEDS_REPLACING).search(note):
        note = compiled(_SURROGATE).sub("\ufffd", note).translate(_CONTROLS)
    # str.split() with no argument splits on exactly what str.isspace() sees.
    note = " ".join(note.split())
    return text if note == text else note  # a note already (a zero-width space, say)


def near_duplicate_key(note: str) -> str:
    """The key two notes share when they are near-duplicates (case and end punctuation)."""
    return key_of_normalised(normalise(note))


def key_of_normalised(note: str) -> str:
    """:func:`near_duplicate_key` of a note that is already normalised (the parser's case)."""
    return note.lower().rstrip(TRAILING_PUNCT).strip()


def without_lone_surrogates(value: T) -> T:
    """``value`` (text, or decoded JSON) with every lone surrogate in its strings as U+FFFD.

    A lone surrogate cannot be written as UTF-8, and Python makes them in two
    ways: JSON may escape half a surrogate pair (``"\\ud800"``), which both
    servers read as U+FFFD (SPEC §11); and a path byte that is not UTF-8 (a
    folder named ``b"caf\\xe9"``) becomes ``"\\udce9"`` in a ``str`` path. Every
    CLI and MCP output passes through here, so such a path is printed as
    ``caf\ufffd``: valid UTF-8 and valid JSON, never a crash. U+FFFD rather than
    an escape because it is what a UTF-8 decoder shows for the same bytes (and
    what JavaScript writes for a lone surrogate); messages that quote a path
    already escape it with :func:`display_path`, which this leaves alone.
    """
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode()  # UTF-8 refuses a surrogate and nothing else: 5x the regex's speed
        except UnicodeEncodeError:
            return compiled(_SURROGATE).sub("\ufffd", value)  # type: ignore[return-value]
        return value
    if isinstance(value, dict):
        return {  # type: ignore[return-value]
            without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]  # type: ignore[return-value]
    return value


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.length`` counts it."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf8_length(text: str) -> int:
    """Length in UTF-8 bytes (lone surrogates count as U+FFFD would: 3 bytes, as
    ``surrogatepass`` encodes them)."""
    if text.isascii():  # the common case, and the recall plan's hot loop
        return len(text)
    if len(text) <= UTF8_PIECE:
        return len(text.encode("utf-8", "surrogatepass"))
    # In pieces: a whole store's text is not encoded again just to be measured (each
    # fresh page costs the first open of a store, issue 11).
    return sum(
        len(text[at : at + UTF8_PIECE].encode("utf-8", "surrogatepass"))
        for at in range(0, len(text), UTF8_PIECE)
    )


UTF8_PIECE = 16_384
"""How much :func:`utf8_length` and :func:`is_utf8` handle at a time: a store is checked
without building its whole text (256 KB of UTF-8 with one emoji is 1 MB of ``str``)."""


def is_utf8(data: bytes, complete: bool = True) -> bool:
    """Whether ``data`` is valid UTF-8; for ``data`` that is only the start of a file
    (``complete=False``), a character cut off at its end is no error.

    Decoded a piece at a time and thrown away: nothing the size of the file is built.
    """
    if data.isascii():
        return True
    view = memoryview(data)
    at = 0
    end = UTF8_PIECE
    try:
        while True:
            last = end >= len(data)
            # Not final before the last piece: a character across the cut is carried on
            # (``at`` stays before it), and each piece reaches further than the last.
            used = utf_8_decode(view[at:end], "strict", last and complete)[1]
            if last:
                return True
            at += used
            end += UTF8_PIECE
    except UnicodeDecodeError:
        return False


def has_controls(text: str) -> bool:
    """True when ``text`` holds a character that normalisation turns into a space."""
    return compiled(_CONTROL).search(text) is not None


def hidden_characters(text: str) -> list[int]:
    """Indices of zero-width, bidi-control and tag characters in ``text``."""
    if text.isprintable():
        return []  # (every hidden character is unprintable: the pattern is not compiled)
    return [m.start() for m in compiled(_HIDDEN).finditer(text)]


def remove_hidden(text: str) -> str:
    """``text`` without its hidden characters."""
    if text.isprintable():
        return text  # (as above; the server's `initialize` cleans the client's name)
    return compiled(_HIDDEN).sub("", text)


_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def display_path(path: str | PurePath) -> str:
    """``path`` as a message quotes it: what could forge a line or hide text is escaped.

    A path can come from the repository (a ``.pi`` symlink's target, a folder
    name) and every message reaches a person or a model, so a newline must not
    start a fake line and a bidi control must not reorder what is read.
    Controls, format characters (bidi, zero-width, tags), lone surrogates and
    line separators become ``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``;
    everything else (spaces, accents, CJK) is kept as it is.
    """
    return escape_unseen(str(path))


def escape_unseen(text: str) -> str:
    """``text`` with what could forge a line or hide text escaped (see :func:`display_path`):
    each character of :data:`UNSEEN_RANGES` (and each lone surrogate).

    For any text shown to a person who must judge it (a proposal under review, a note
    quoted in a diagnostic, a fix's title or the doctor's report) as well as for paths.
    """
    if text.isprintable():
        # The common case, with or without CJK or emoji: every unseen character (a
        # control, a format character, a separator, a lone surrogate) is unprintable
        # (tests/unit/test_text.py holds the ranges to it). The pattern, whose class
        # reaches past U+FFFF, costs ~0.7 ms to compile: a store's first publish.
        return text
    return compiled(_UNSEEN).sub(_escape_unseen, text)


def _escape_unseen(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


@record
class SplitText:
    """A file's text cut into lines, with what is needed to write it back alike."""

    bom: bool
    lines: list[str]
    eol: str

    def render(self, lines: list[str] | None = None) -> str:
        """Join ``lines`` (default: the original ones) in this file's style.

        A first line that starts with U+FEFF (e.g. once the lines above it were
        removed) gets a BOM in front, so the reader does not take its U+FEFF for
        the BOM and read that line differently (``"\\ufeff- x"`` is prose, not a note).
        """
        body = self.eol.join(self.lines if lines is None else lines)
        return (BOM + body) if self.bom or body.startswith(BOM) else body


def split_text(content: str) -> SplitText:
    """Split ``content`` on ``\\n`` and ``\\r\\n`` only, setting a leading BOM aside.

    The line-ending style is that of the first line ending (LF when there is none).
    The last element is ``""`` when the text ends with a line ending.
    """
    bom = content.startswith(BOM)
    body = content[1:] if bom else content
    first = body.find("\n")
    eol = "\r\n" if first > 0 and body[first - 1] == "\r" else "\n"
    lines = body.split("\n")
    if "\r" in body:  # a CR is part of the line ending only right before the LF
        last = lines.pop()
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        lines.append(last)
    return SplitText(bom=bom, lines=lines, eol=eol)


def first_invalid_utf8(data: bytes) -> int | None:
    """Offset of the first byte that is not valid UTF-8, or ``None``."""
    if is_utf8(data):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None  # (unreachable: is_utf8 said it is not UTF-8)


def decode_for_display(data: bytes) -> str:
    """Decode store bytes, replacing invalid sequences, so they can be shown and checked."""
    return data.decode("utf-8", "replace")
