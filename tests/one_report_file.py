"""One store that each front must report the same way (SPEC §9; issue 9 item 11).

A byte order mark, an invalid byte on the first line, and a duplicate pair that
is not on adjacent lines.
"""

from __future__ import annotations

import re

CONTENT = (
    b"\xef\xbb\xbf- caf\xe9 is spelt badly\n"  # line 1: bad byte after the BOM
    b"\n"
    b"- use pnpm, not npm\n"  # line 3
    b"- tests need DATABASE_URL\n"
    b"- Use pnpm, not npm.\n"  # line 5: duplicate of line 3
)
BAD_BYTE = (1, 6)
"""(line, column), 1-based, columns in characters: after ``- caf`` (the BOM is no character)."""
DUPLICATE = (5, "Duplicate of the note on line 3: use pnpm, not npm")
"""(line, message) of the duplicate, as ``check`` prints it."""

_ROW = re.compile(r"^(?P<path>.*):(?P<line>\d+):(?P<col>\d+): (?P<code>\S+) (?P<message>.*)$")


def check_rows(stdout: str) -> dict[str, tuple[int, int, str]]:
    """``code -> (line, column, message)`` from ``check``'s text output."""
    rows = {}
    for line in stdout.splitlines():
        m = _ROW.match(line)
        assert m, line
        rows[m["code"]] = (int(m["line"]), int(m["col"]), m["message"])
    return rows
