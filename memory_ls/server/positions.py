"""Columns in the negotiated position encoding (UTF-8, UTF-16 or UTF-32).

The core counts columns in code points (``str`` indices); a client counts in
the units it negotiated. ASCII lines, by far the most common, take a fast path.
"""

from __future__ import annotations

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"


def to_client(line: str, col: int, encoding: str) -> int:
    """A ``str`` index on ``line`` as a column in ``encoding`` units."""
    if encoding == UTF32 or line.isascii():
        return col
    prefix = line[:col]
    if encoding == UTF16:
        return len(prefix.encode("utf-16-le", "surrogatepass")) // 2
    return len(prefix.encode("utf-8", "surrogatepass"))


def from_client(line: str, units: int, encoding: str) -> int:
    """A column in ``encoding`` units as a ``str`` index on ``line`` (clamped to the line)."""
    if units <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    if encoding == UTF16:
        count = 0
        for i, c in enumerate(line):
            count += 2 if ord(c) > 0xFFFF else 1
            if count > units:
                return i
        return len(line)
    data = line.encode("utf-8", "surrogatepass")[:units]
    try:
        # surrogatepass both ways: a lone surrogate counts as the 3 bytes to_client gives it.
        return len(data.decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError as exc:  # the column falls inside a character: whole ones only
        return len(data[: exc.start].decode("utf-8", "surrogatepass"))
