"""Hold a store's write lock from another process, as a second memory-ls writer would.

``python tests/lock_holder.py STORE SECONDS`` takes the very lock the writer takes
(:func:`memory_ls.store.files.store_lock`: the ``flock`` on the store's folder),
prints ``locked`` on its own line, and holds it until SECONDS have passed or a
line (or end of file) arrives on its standard input, then releases it and exits.
Tests use it through :func:`held_lock` to make every front end wait for the lock.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

SCRIPT = Path(__file__).resolve()


@contextlib.contextmanager
def held_lock(
    store: Path, env: Mapping[str, str], seconds: float = 60.0
) -> Iterator[subprocess.Popen[str]]:
    """Hold ``store``'s lock in a helper process for the ``with`` block (or ``seconds``).

    The block starts once the lock is held; leaving it releases the lock and
    waits for the helper to exit. ``release(proc)`` releases it earlier.
    """
    env = {k: v for k, v in env.items() if k != "MEMORY_LS_LOCK_TIMEOUT"}
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(store), str(seconds)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "locked\n", f"the lock holder failed: {line!r} {proc.stderr.read()!r}"
        yield proc
    finally:
        release(proc)


def release(proc: subprocess.Popen[str]) -> None:
    """Let the helper release the lock, and wait for it to exit."""
    if proc.stdin is not None and not proc.stdin.closed:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def waits_on(pid: int, folder: Path, timeout: float = 30.0) -> bool:
    """Whether process ``pid`` opened ``folder`` (the writer's lock) within ``timeout`` s.

    Reads ``/proc/<pid>/fd``, so it is Linux only; a writer that opened the
    folder while the lock is held is waiting for it.
    """
    import time

    want = str(folder)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                        return True
        time.sleep(0.02)
    return False


def main() -> int:
    from memory_ls.store.files import store_lock

    store, seconds = Path(sys.argv[1]), float(sys.argv[2])
    with store_lock(store, make_parents=True):
        print("locked", flush=True)
        select.select([sys.stdin], [], [], seconds)  # a line, EOF or the time up
    return 0


if __name__ == "__main__":
    sys.exit(main())
