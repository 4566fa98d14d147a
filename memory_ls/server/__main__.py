"""``python -m memory_ls.server``: the language server on stdio."""

from __future__ import annotations

import sys

from memory_ls.server.server import serve

if __name__ == "__main__":
    sys.exit(serve("stdio", None, None))
