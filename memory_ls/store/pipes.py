"""Pipes on the standard streams, widened so a big message goes through in one write.

A Linux pipe holds 64 KiB. A writer with more to say blocks until the reader has
taken some, so 276 kB of ``memory-ls list --json`` (the 4,500-note store) or a
256 KB ``didOpen`` crosses in rounds between the two processes, each round a
wake-up of the other, which on a loaded machine waits for a core. A pipe widened
first takes it all in one ``write``: the CLI then exits without waiting for its
reader, and the server reads a message whole.
"""

from __future__ import annotations

import os
import stat

PIPE_BYTES = 1024 * 1024
"""What a pipe is widened to (Linux's default ceiling for a process), else a half or a
quarter of it."""


def widen(fd: int) -> None:
    """Let the pipe ``fd`` hold :data:`PIPE_BYTES`, or as much of it as the system allows.

    Nothing happens when ``fd`` is not a pipe (a file, a terminal, a socket) or the
    system has no ``F_SETPIPE_SZ`` (it is Linux's).
    """
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        import fcntl

        setpipe = fcntl.F_SETPIPE_SZ
    except (OSError, ValueError, AttributeError, ImportError):
        return
    for size in (PIPE_BYTES, PIPE_BYTES // 2, PIPE_BYTES // 4):
        try:
            fcntl.fcntl(fd, setpipe, size)
            return
        except PermissionError:  # over /proc/sys/fs/pipe-max-size: try less
            continue
        except OSError:
            return
