"""``memory_ls/server/review.py``: the review inbox's code lenses (SPEC §12)."""

from __future__ import annotations

from typing import cast

from memory_ls.core.models import Proposal
from memory_ls.server.review import accept_title


def test_an_accept_lens_shows_hidden_characters_escaped() -> None:
    # The lens is where a person decides: a bidi override must not reorder what it says.
    add = cast(Proposal, {"id": "aaaaaaaa", "action": "add", "text": "use\u202e npm", "by": "x"})
    assert accept_title(add) == "✓ Accept add: use\\u202e npm (x)"
    long = cast(Proposal, {"id": "b", "action": "add", "text": "\u200b" * 100, "by": "x"})
    escaped = "\\u200b" * 9 + "\\u200…"
    assert accept_title(long) == f"✓ Accept add: {escaped} (x)"
