"""What ``serve`` keeps resident: ``memory_ls/server/footprint.py`` (issue 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memory_ls.server import footprint


def test_an_import_fails_inside_the_block_and_works_after_it() -> None:
    sys.modules.pop("colorsys", None)
    with footprint.without(("colorsys",)), pytest.raises(ImportError):
        import colorsys
    assert "colorsys" not in sys.modules
    import colorsys  # noqa: F401

    assert "colorsys" in sys.modules


def test_a_module_already_loaded_stays_loaded() -> None:
    with footprint.without(("json",)):
        import json as again

        assert again is json
    assert sys.modules["json"] is json


def test_the_server_imported_without_tls_has_asyncio_without_it() -> None:
    """asyncio's own fallback (``ssl = None``); with ``tls`` the import is the usual one."""
    code = (
        "import sys\n"
        "from memory_ls.server import footprint\n"
        "server = footprint.import_server(tls=sys.argv[1] == 'tls')\n"
        "import asyncio.sslproto, json\n"
        "print(json.dumps([server.__name__, 'ssl' in sys.modules, asyncio.sslproto.ssl is None]))"
    )
    seen = {}
    for how in ("tls", "plain"):
        done = subprocess.run(
            [sys.executable, "-c", code, how], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        seen[how] = json.loads(done.stdout)
    assert seen["tls"] == ["memory_ls.server.server", True, False]
    assert seen["plain"] == ["memory_ls.server.server", False, True]


def test_malloc_gets_one_arena_on_glibc() -> None:
    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        glibc = False
    code = "from memory_ls.server import footprint; print(footprint.limit_malloc())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(glibc)


def test_the_server_is_imported_with_fewer_young_collections() -> None:
    """The collector's first threshold is raised while the server's modules are imported
    (their ~90,000 lasting objects were walked again and again: ~55 ms of a cold start),
    and put back after."""
    code = (
        "import gc, sys\n"
        "from memory_ls.server import footprint\n"
        "seen = []\n"
        "class Seen:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'memory_ls.server.server':\n"
        "            seen.append(gc.get_threshold())\n"
        "sys.meta_path.insert(0, Seen())\n"
        "gc.set_threshold(int(sys.argv[1]), 10, 10)\n"
        "footprint.import_server()\n"
        "print(seen[0], gc.get_threshold())"
    )
    for first, during in ((700, footprint.IMPORT_GC_THRESHOLD), (0, 0)):
        done = subprocess.run(
            [sys.executable, "-c", code, str(first)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        # (0: the collector switched off by whoever runs us, and left so.)
        assert done.stdout.split(") (") == [f"({during}, 10, 10", f"{first}, 10, 10)\n"]


def test_the_collectors_threshold_is_put_back_when_the_import_fails() -> None:
    code = (
        "import gc, sys\n"
        "from memory_ls.server import footprint\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'memory_ls.server.server':\n"
        "            raise ImportError('refused')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "gc.set_threshold(700, 10, 10)\n"
        "try:\n"
        "    footprint.import_server()\n"
        "except ImportError as e:\n"
        "    print(e, gc.get_threshold())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "refused (700, 10, 10)\n"
