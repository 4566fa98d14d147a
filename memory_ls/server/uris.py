"""File URIs and paths, byte for byte, even for a folder whose name is not UTF-8.

pygls reads a URI's percent escapes as UTF-8 with replacement (``caf%E9`` becomes
``caf\ufffd``, a folder that does not exist) and cannot write a URI for a path
holding a lone surrogate (how Python reads such a name) at all: it raises. The
server converts between the two only here.
"""

from __future__ import annotations

import os
import urllib.parse

from pygls.uris import from_fs_path, to_fs_path

from memory_ls.core.text import without_lone_surrogates


def path_of_uri(uri: str) -> str | None:
    """The file system path a ``file:`` URI names (``None`` for another scheme).

    On POSIX the escapes are bytes of the name, as the client quoted them, so
    ``file:///tmp/caf%E9`` is the folder ``b"/tmp/caf\\xe9"``.
    """
    path = to_fs_path(uri)
    if path is None or os.name == "nt" or "%" not in uri:
        return path
    parts = urllib.parse.urlsplit(uri)
    if parts.netloc not in ("", "localhost"):  # a UNC share: as pygls reads it
        return path
    return os.fsdecode(urllib.parse.unquote_to_bytes(parts.path))


def uri_of_path(path: str | os.PathLike[str]) -> str:
    """The ``file:`` URI of ``path``, quoting the bytes of a name that is not UTF-8."""
    text = os.fspath(path)
    if os.name != "nt" and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            try:
                return "file://" + urllib.parse.quote(os.fsencode(text))
            except UnicodeEncodeError:  # a surrogate no file name holds
                text = without_lone_surrogates(text)
    return from_fs_path(text) or text
