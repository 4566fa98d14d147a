"""``python -m memory_ls`` is the ``memory-ls`` command."""

import sys

from memory_ls.cli import main

sys.exit(main())
