"""Memory across branches and machines, with the user's own git (SPEC §14).

Three entry points, each spawning the real ``git`` (unlike project-root
resolution, SPEC §1, which must work without it):

- :func:`merge_file`: the merge driver git runs as ``memory-ls merge-file %O %A
  %B``. The merge itself is :func:`memory_ls.core.merge.merge_notes`; when it
  is not clean the file is left to ``git merge-file`` (conflict markers, exit 1).
- :func:`git_setup`: the ``.gitattributes`` lines and the ``merge.memory-ls``
  config, idempotently, saying what it changed.
- :func:`sync`: commit, pull with the driver, push, holding the store's lock
  (:func:`memory_ls.store.files.store_lock`, the one every write takes), so no
  add from another process falls between the commit and the merge.

Every failure is a :class:`GitRefused` whose message quotes git's own words and
says what to do; nothing here ever discards a local note or commit.
"""

from __future__ import annotations

import os
import shlex
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memory_ls.core.merge import merge_notes
from memory_ls.core.models import Scope, SyncResult
from memory_ls.core.notes import parse_notes
from memory_ls.core.text import MAX_STORE_BYTES, display_path
from memory_ls.store.facts import not_regular_message
from memory_ls.store.files import (
    StoreRefused,
    read_store,
    store_lock,
    symlink_message,
    write_refusal,
)
from memory_ls.store.paths import INBOX_FILE_NAME, inbox_path, real_path, unfollowable

DRIVER_NAME = "memory-ls note-wise merge of memory.md"
DRIVER_COMMAND = "memory-ls merge-file %O %A %B"
"""What ``git-setup`` writes into the repository's config (SPEC §14)."""
LABELS = ("current", "base", "other")
"""Conflict-marker labels when a merge is left to ``git merge-file``."""
GIT_TIMEOUT = 300.0
"""Seconds a git process may take (a pull over a slow network) before it is stopped."""


class GitRefused(Exception):
    """Something git or the repository refused; the message is for the user, as it is."""


@dataclass(frozen=True, slots=True)
class GitRun:
    """One finished git process."""

    code: int
    out: str
    err: str

    @property
    def words(self) -> str:
        """What git said (its output, then its error output), on one line, for quoting."""
        said = [part.strip() for part in (self.out, self.err) if part.strip()]
        text = " / ".join(line for part in said for line in part.splitlines() if line.strip())
        return text or f"exit status {self.code}"


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: never a prompt on a terminal nobody watches."""
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_MERGE_AUTOEDIT": "no"})
    env.update(extra or {})
    return env


def run_git(
    args: Sequence[str], cwd: Path, timeout: float = GIT_TIMEOUT, errors: str = "replace"
) -> GitRun:
    """Run ``git ARGS`` in ``cwd``; a missing git or a timeout is a :class:`GitRefused`.

    Output that is not UTF-8 is decoded with ``errors``: replacement characters
    for words shown to a person, ``surrogateescape`` for a path used again.
    """
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors=errors,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        if not cwd.is_dir():
            raise GitRefused(f"{display_path(cwd)} does not exist.") from None
        raise GitRefused("git is not installed (or not on PATH).") from exc
    except subprocess.TimeoutExpired:
        raise GitRefused(f"git {args[0]} took more than {timeout:.0f} s and was stopped.") from None
    return GitRun(done.returncode, done.stdout, done.stderr)


# -- the merge driver ------------------------------------------------------------------


def merge_file(base: Path, current: Path, other: Path) -> tuple[int, str | None]:
    """Merge three versions of a store into ``current``, as git's merge driver.

    Returns the exit code (0 clean, 1 conflict markers left by ``git merge-file``)
    and, when not clean, why. A version that is not UTF-8 is left to git too.
    """
    data = [_read_version(base, False), _read_version(current, True), _read_version(other, False)]
    texts: list[str] = []
    for version in data:
        if version is None:
            return _git_merge_file(base, current, other), OVER_CAP_VERSION
        try:
            texts.append(version.decode("utf-8"))
        except UnicodeDecodeError:
            return _git_merge_file(base, current, other), "a version is not valid UTF-8"
    result = merge_notes(*texts)
    if result.clean and result.text is not None:
        # git hands the driver a temporary copy of CURRENT to overwrite.
        current.write_bytes(result.text.encode("utf-8"))
        return 0, None
    return _git_merge_file(base, current, other), result.reason


OVER_CAP_VERSION = f"a version is larger than the {MAX_STORE_BYTES}-byte limit"


def _read_version(path: Path, current: bool) -> bytes | None:
    """One version's bytes; ``None`` when it is over the store cap (left to git unread).

    git hands the driver temporary regular files. Anything else is refused before
    it is opened for reading (SPEC §8: a FIFO or device must not hang the merge),
    and a symlinked CURRENT too: the merge is written to CURRENT, and through a
    link it would overwrite whatever file the link names.
    """
    shown = display_path(path)
    try:
        st = os.stat(path, follow_symlinks=not current)
    except OSError as exc:
        raise GitRefused(f"Cannot read {shown}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise GitRefused(symlink_message(path))
    if not stat.S_ISREG(st.st_mode):
        raise GitRefused(not_regular_message(path))
    if st.st_size > MAX_STORE_BYTES:
        return None
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if current:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped since the stat
                raise GitRefused(not_regular_message(path))
            data = f.read(MAX_STORE_BYTES + 1)
    except OSError as exc:
        raise GitRefused(f"Cannot read {shown}: {exc.strerror or exc}") from None
    return None if len(data) > MAX_STORE_BYTES else data


def _git_merge_file(base: Path, current: Path, other: Path) -> int:
    labels = [arg for label in LABELS for arg in ("-L", label)]
    # Absolute paths: git runs in CURRENT's folder, where a relative path no longer names it.
    files = [os.path.abspath(path) for path in (current, base, other)]
    run = run_git(["merge-file", *labels, *files], cwd=Path(files[0]).parent)
    # git merge-file exits with the number of conflicts (at most 127), negative (255)
    # on an error: an error leaves CURRENT without markers, so it is no conflict to
    # resolve but a failure to report.
    if run.code < 0 or run.code > 127 or (run.code == 0 and run.err.strip()):
        raise GitRefused(f"git merge-file failed: {run.words}")
    return 1  # left to git: the file needs a person, even when git's own merge was clean


# -- set-up ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Repository:
    """The work tree holding a store, and the store's path in it."""

    root: Path
    store: str
    """The store's path relative to ``root``, with ``/``."""

    @property
    def inbox(self) -> str:
        """The review inbox beside the store (SPEC §12), relative to ``root``."""
        return (
            self.store.rsplit("/", 1)[0] + "/" + INBOX_FILE_NAME
            if "/" in self.store
            else INBOX_FILE_NAME
        )


def repository_of(folder: Path, store: Path, what: str) -> Repository:
    """The git work tree holding ``folder``; refused, quoting git, when there is none."""
    if not folder.is_dir():
        why = unfollowable(folder) or "does not exist"  # (a loop or chain exists, unopenable)
        raise GitRefused(f"Cannot {what}: {display_path(folder)} {why}.")
    # A path, used again: a folder name that is not UTF-8 must survive the round trip.
    run = run_git(["rev-parse", "--show-toplevel"], folder, errors="surrogateescape")
    if run.code != 0 or not run.out.strip():
        words = run.words.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise GitRefused(
            f"Cannot {what}: {display_path(folder)} is not in a git work tree "
            f'(git says: "{words}").'
        )
    root = Path(run.out.strip())
    real_store = Path(real_path(store.parent)) / store.name
    try:
        relative = real_store.relative_to(Path(real_path(root)))
    except ValueError:
        raise GitRefused(
            f"Cannot {what}: {display_path(store)} is outside its repository {display_path(root)}."
        ) from None
    return Repository(root, relative.as_posix())


def _attribute_pattern(path: str) -> str:
    """``path`` as a .gitattributes pattern that matches exactly that file.

    A pattern without a ``/`` would match that name in every folder: a store at
    the repository's root is anchored with a leading ``/``.
    """
    out = [] if "/" in path else ["/"]
    for char in path:
        if char.isspace():
            out.append("[[:space:]]")  # gitattributes has no quoting for a space
        elif char in "*?[\\!#":
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def wanted_attributes(repo: Repository) -> list[str]:
    """The .gitattributes lines the store and its inbox need (SPEC §14)."""
    return [
        f"{_attribute_pattern(repo.store)} merge=memory-ls",
        f"{_attribute_pattern(repo.inbox)} merge=union",
    ]


@dataclass(slots=True)
class SetupReport:
    """What :func:`git_setup` changed (nothing, when it was already set up)."""

    repo: Repository
    changes: list[str] = field(default_factory=list)
    attributes_written: bool = False


def _read_attributes(path: Path) -> str:
    """The text of the work tree's ``.gitattributes`` ("" when missing), to append to.

    A symlink is refused, not followed: a cloned repository can ship
    ``.gitattributes -> ~/.bashrc``, and git itself does not read a symlinked
    ``.gitattributes`` in the work tree. A FIFO or device is refused before it
    is opened (SPEC §8). Bytes, decoded as they are: a text-mode read would turn
    CRLF into LF, and the write would then rewrite every line of the user's file.
    """
    shown = display_path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise GitRefused(f"Cannot read {shown}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise GitRefused(
            f"Refusing to change the symlinked {shown}: git does not read a symlinked "
            ".gitattributes in the work tree; make it a regular file."
        )
    if not stat.S_ISREG(st.st_mode):
        raise GitRefused(f"{shown} is not a regular file.")
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GitRefused(f"Cannot read {shown}: {exc}") from None


def git_setup(repo: Repository) -> SetupReport:
    """Add the merge attributes and the ``merge.memory-ls`` driver config, where missing."""
    report = SetupReport(repo)
    attributes = repo.root / ".gitattributes"
    existing = _read_attributes(attributes)
    present = {tuple(line.split()) for line in existing.splitlines()}
    missing = [line for line in wanted_attributes(repo) if tuple(line.split()) not in present]
    if missing:
        eol = "\r\n" if "\r\n" in existing else "\n"
        head = existing if not existing or existing.endswith("\n") else existing + eol
        attributes.write_bytes((head + "".join(line + eol for line in missing)).encode("utf-8"))
        report.attributes_written = True
        for line in missing:
            report.changes.append(f"{display_path(attributes)}: added {line}")
    for key, value in (("name", DRIVER_NAME), ("driver", DRIVER_COMMAND)):
        name = f"merge.memory-ls.{key}"
        now = run_git(["config", "--get", name], repo.root)
        if now.code == 0 and now.out.rstrip("\n") == value:
            continue
        done = run_git(["config", "--local", name, value], repo.root)
        if done.code != 0:
            raise GitRefused(f'Cannot set {name} (git says: "{done.words}").')
        report.changes.append(f"git config {name} {shlex.quote(value)}")
    return report


# -- sync ------------------------------------------------------------------------------


def _driver_here() -> str:
    """The merge driver as this very program, for the pull that sync runs.

    The config says ``memory-ls merge-file``, which needs ``memory-ls`` on PATH;
    the editor's server may run from a private environment, so sync names itself.
    """
    return f"{shlex.quote(sys.executable)} -m memory_ls merge-file %O %A %B"


def _host() -> str:
    return socket.gethostname().split(".", 1)[0] or "localhost"


def _notes_at(repo: Repository, rev: str) -> list[str]:
    run = run_git(["show", f"{rev}:{repo.store}"], repo.root)
    return parse_notes(run.out) if run.code == 0 else []


def _tracked_or_present(repo: Repository, path: str) -> bool:
    if (repo.root / path).exists():
        return True
    return run_git(["ls-files", "--error-unmatch", "--", path], repo.root).code == 0


def _attributes_to_commit(repo: Repository) -> bool:
    """Whether .gitattributes holds our lines and differs from what HEAD has."""
    path = repo.root / ".gitattributes"
    try:
        text = path.read_bytes().decode("utf-8")  # as committed: CRLF stays CRLF
    except (OSError, UnicodeDecodeError):
        return False
    if "merge=memory-ls" not in text:
        return False
    head = run_git(["show", "HEAD:.gitattributes"], repo.root)
    # git's output is read in text mode (universal newlines): compare line endings alike.
    return head.code != 0 or head.out != text.replace("\r\n", "\n").replace("\r", "\n")


def failed_sync(scope: Scope, error: str | None) -> SyncResult:
    """A sync result with nothing done yet (and ``error``, when given)."""
    result: SyncResult = {
        "scope": scope,
        "repository": "",
        "upstream": "",
        "setup": [],
        "arrived": [],
        "left": [],
        "pushed": False,
    }
    if error is not None:
        result["error"] = error
    return result


def sync(
    scope: Scope,
    folder: Path,
    store: Path,
    check: Callable[[str], str | None] | None = None,
) -> SyncResult:
    """Bring ``store`` up to date with its repository's upstream (SPEC §14).

    ``folder`` is where the repository is looked for (the agent dir, or the
    project root); ``check`` is the store folder's refusal rule, asked under
    the lock (as every write asks it). Never raises for a refusal: the result
    carries ``error``.
    """
    result = failed_sync(scope, None)
    try:
        _sync(scope, folder, store, check, result)
    except (GitRefused, StoreRefused) as exc:
        result["error"] = str(exc)
    except OSError as exc:
        result["error"] = f"Cannot sync the {scope} store: {exc.strerror or exc}"
    return result


def _sync(
    scope: Scope,
    folder: Path,
    store: Path,
    check: Callable[[str], str | None] | None,
    result: SyncResult,
) -> None:
    what = f"sync the {scope} store"
    repo = repository_of(folder, store, what)
    result["repository"] = str(repo.root)
    upstream = run_git(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], repo.root)
    if upstream.code != 0:
        raise GitRefused(
            f"Cannot {what}: the current branch of {display_path(repo.root)} has no upstream "
            f'(git says: "{upstream.words}"). Push it once with `git push -u <remote> <branch>`.'
        )
    result["upstream"] = upstream.out.strip()
    if run_git(["rev-parse", "-q", "--verify", "MERGE_HEAD"], repo.root).code == 0:
        raise GitRefused(
            f"Cannot {what}: a merge is in progress in {display_path(repo.root)}; "
            "finish it (or `git merge --abort`) first."
        )
    with store_lock(store, make_parents=scope == "global", check=check) as locked:
        unreadable = read_store(store, locked).error
        if unreadable:
            raise GitRefused(f"Cannot {what}: {unreadable}")
        # A store or inbox that a write would not replace (other names, read-only,
        # another owner's: SPEC §3's writes refuse it) is not replaced by a pull either:
        # git's checkout writes a new file, with git's mode, and other names would keep
        # the old notes.
        refused = write_refusal(store) or write_refusal(inbox_path(store))
        if refused:
            raise GitRefused(f"Cannot {what}: {refused}")
        setup = git_setup(repo)
        result["setup"] = setup.changes
        _commit(scope, repo, result)
        local = parse_notes(read_store(store, locked).content)
        _pull(repo, what)
        merged = parse_notes(read_store(store, locked).content)
        arrived_set, local_set = set(merged), set(local)
        result["arrived"] = [n for n in merged if n not in local_set]
        result["left"] = [n for n in local if n not in arrived_set]
        _push(repo, what, result)


def _commit(scope: Scope, repo: Repository, result: SyncResult) -> None:
    """Commit the store when it changed: for the global store, its inbox and our .gitattributes too.

    A project's repository holds the project's own work: only ``.pi/memory.md`` is committed.
    """
    if scope == "project":
        paths = [repo.store] if _tracked_or_present(repo, repo.store) else []
    else:
        paths = [p for p in (repo.store, repo.inbox) if _tracked_or_present(repo, p)]
        if _attributes_to_commit(repo):
            paths.append(".gitattributes")
    if not paths:
        return
    # What the user had staged already stays staged whatever happens; what sync stages
    # itself is unstaged again when the commit is refused (a hook), so nothing changed.
    staged = run_git(["diff", "--cached", "--name-only", "-z", "--", *paths], repo.root)
    already = set(staged.out.split("\0")) if staged.code == 0 else set(paths)
    added = run_git(["add", "-A", "--", *paths], repo.root)
    if added.code != 0:
        raise GitRefused(f'Cannot commit the store (git says: "{added.words}").')
    if run_git(["diff", "--cached", "--quiet", "--", *paths], repo.root).code == 0:
        return  # nothing new to commit
    before = _notes_at(repo, "HEAD")
    store = repo.root / repo.store
    after = (
        parse_notes(store.read_text(encoding="utf-8", errors="replace")) if store.exists() else []
    )
    before_set, after_set = set(before), set(after)
    plus = sum(1 for n in after_set if n not in before_set)
    minus = sum(1 for n in before_set if n not in after_set)
    message = f"memory: +{plus} -{minus} on {_host()}"
    done = run_git(["commit", "-q", "-m", message, "--", *paths], repo.root)
    if done.code != 0:
        ours = [p for p in paths if p not in already]
        if ours:
            run_git(["reset", "-q", "--", *ours], repo.root)
        raise GitRefused(
            f'Cannot commit the store (git says: "{done.words}"). Nothing was changed; '
            "fix that and run sync again."
        )
    result["commit"] = message


def _pull(repo: Repository, what: str) -> None:
    """``git pull --no-rebase --ff --no-edit`` with our driver; undone entirely when it fails."""
    head = run_git(["rev-parse", "-q", "--verify", "HEAD"], repo.root).out.strip()
    pull = run_git(
        # --ff: a user's merge.ff = only (or pull.ff = only) would refuse every merge of
        # diverged notes; sync's job is that merge.
        [
            "-c",
            f"merge.memory-ls.driver={_driver_here()}",
            "pull",
            "--no-rebase",
            "--ff",
            "--no-edit",
        ],
        repo.root,
    )
    if pull.code == 0:
        return
    undone = ""
    if run_git(["rev-parse", "-q", "--verify", "MERGE_HEAD"], repo.root).code == 0:
        abort = run_git(["merge", "--abort"], repo.root)
        if abort.code != 0:
            undone = f' The merge could not be undone (git says: "{abort.words}").'
    now = run_git(["rev-parse", "-q", "--verify", "HEAD"], repo.root).out.strip()
    kept = (
        "Your notes and your local commit are as they were"
        if now == head and not undone
        else "Nothing local was discarded"
    )
    raise GitRefused(
        f'Cannot {what}: git pull failed (git says: "{pull.words}").{undone} {kept}; '
        f"resolve it in {display_path(repo.root)} (e.g. `git pull` there), then sync again."
    )


def _push(repo: Repository, what: str, result: SyncResult) -> None:
    branch = run_git(["symbolic-ref", "--short", "HEAD"], repo.root).out.strip()
    remote = run_git(["config", f"branch.{branch}.remote"], repo.root).out.strip()
    target = run_git(["config", f"branch.{branch}.merge"], repo.root).out.strip()
    push = run_git(["push", "--quiet", remote or "origin", f"HEAD:{target or branch}"], repo.root)
    if push.code != 0:
        sha = run_git(["rev-parse", "--short", "HEAD"], repo.root).out.strip()
        raise GitRefused(
            f'Cannot {what}: git push failed (git says: "{push.words}"). Your notes are '
            f"committed locally ({sha}) and nothing is lost; run sync again to merge what "
            "the remote has and push."
        )
    result["pushed"] = True
