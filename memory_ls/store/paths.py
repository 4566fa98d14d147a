"""Where the stores live: the agent dir, the project root and the store paths (SPEC §1).

The project root is found by reading ``.git`` entries the way git does, never by
spawning ``git``: it must work where git is not installed, and fast (it runs on
every CLI call and for every document the server opens).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from memory_ls.core.records import record
from memory_ls.core.text import display_path

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:  # types only: the read verbs do not import the boundary shapes
    from memory_ls.core.models import Scope


AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
"""The environment variable Pi reads for its agent dir."""

STORE_FILE_NAME = "memory.md"
INBOX_FILE_NAME = "memory.inbox.jsonl"
"""The review inbox beside each store (SPEC §12), under the same lock."""


def inbox_path(store: Path) -> Path:
    """The review inbox beside a store."""
    return store.with_name(INBOX_FILE_NAME)


# A `.git` file, a `commondir` or a git `config` is tiny; anything bigger is
# not what we are looking for, and reading it would only cost time.
_GIT_FILE_LIMIT = 64 * 1024


def agent_dir_for(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Return the agent dir: ``explicit``, else ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``.

    A leading ``~`` expands to the home directory (``$HOME`` from ``env`` when
    it has one). An empty ``explicit`` or environment value counts as not
    given. The result is absolute but need not exist; symlinks are kept, so
    the path reads the way the user wrote it.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    chosen = explicit or environ.get(AGENT_DIR_ENV) or ""
    if not chosen:
        return _home(environ) / ".pi" / "agent"
    return Path(os.path.abspath(_expand_home(chosen, environ)))


def global_store_path(agent_dir: Path) -> Path:
    """Return the global store, ``<agent-dir>/memory.md``."""
    return agent_dir / STORE_FILE_NAME


def project_store_path(project_root: Path) -> Path:
    """Return the project store, ``<project-root>/.pi/memory.md``."""
    return project_folder(project_root) / STORE_FILE_NAME


def project_folder(project_root: Path) -> Path:
    """Return the project's ``.pi`` folder, ``<project-root>/.pi``."""
    return project_root / ".pi"


def outside_project_message(project_root: Path, real: str) -> str:
    """Refusal for a project whose ``.pi`` resolves outside it (``real`` is where it leads).

    Both paths come from the repository (a link's target is any text), so they
    are quoted with :func:`display_path`: a target cannot forge lines.
    """
    folder = display_path(project_folder(project_root))
    return f"Refusing to use {folder}: it resolves outside the project ({display_path(real)})."


def symlink_loop_message(project_root: Path) -> str:
    """Refusal for a project whose ``.pi`` is a symlink loop (``.pi -> .pi``, or two links
    that name each other): it resolves to no folder at all, inside the project or out."""
    folder = display_path(project_folder(project_root))
    return (
        f"Refusing to use {folder}: it is a symlink that leads round in a loop, never to a folder."
    )


def symlink_chain_message(project_root: Path) -> str:
    """Refusal for a project whose ``.pi`` leads on through more symlinks than the system
    follows (40 on Linux), none of them twice: no loop, but nothing can open it either."""
    folder = display_path(project_folder(project_root))
    return (
        f"Refusing to use {folder}: it is a chain of more symlinks than the system follows, "
        "so it cannot be opened."
    )


def too_many_links(path: Path) -> str | None:
    """``"loop"`` or ``"chain"`` when the system will not follow ``path``'s symlinks ("Too
    many levels of symbolic links", ``ELOOP``), else ``None``: ``"loop"`` when they go
    round (:func:`goes_round`), ``"chain"`` when they only lead on through more links
    than it follows (40 on Linux). One ``stat`` when they can be followed."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "loop" if goes_round(path) else "chain"
    except ValueError:
        pass
    return None


def unfollowable(path: Path) -> str | None:
    """Why the system will not follow ``path``'s symlinks, as words after its name (``"is a
    chain of more symlinks than the system follows"``), or ``None`` when it will: one way
    to name a loop or a chain (:func:`too_many_links`) wherever a path is refused for it."""
    links = too_many_links(path)
    if links == "loop":
        return "is a symlink that leads back to itself"
    if links == "chain":
        return "is a chain of more symlinks than the system follows"
    return None


def real_path(path: str | os.PathLike[str]) -> str:
    """:func:`os.path.realpath` (not strict) without its recursion: the one way a path is
    resolved here.

    Python 3.11's realpath calls itself once per symlink it follows, so a chain of a
    thousand links (a cloned repository can ship one, a user can name one) ends whatever
    resolves it with ``RecursionError``. This is the same walk with a stack of what is
    left to resolve instead, and the same answers: each link is resolved once (a seen
    map), what cannot be looked at is taken as no link, and a loop is left where it
    starts, with the rest of the path kept as written (3.11's answer for a loop also
    depends on how the path was spelled; this one does not). A chain of more links than
    the system follows resolves to where it ends, which the system cannot open through
    the chain: :func:`too_many_links` tells whether it can. A NUL byte raises
    ``ValueError``.
    """
    if os.name == "nt":  # pragma: no cover - Windows' realpath asks the system: no recursion
        return os.path.realpath(path)
    return _walk(path)[0]


def _walk(path: str | os.PathLike[str]) -> tuple[str, bool]:
    """:func:`real_path`'s answer, and whether a loop stopped it."""
    name = os.fspath(path)
    sep = os.sep
    # What is left, last part first; a 1-tuple marks the end of a link's target.
    rest: list[str | tuple[str]] = [*name.split(sep)[::-1]]
    here = sep if name.startswith(sep) else os.getcwd()  # (getcwd has no symlinks)
    seen: dict[str, str | None] = {}
    """Each link met: where it leads, ``None`` while it is being followed."""
    lstat, readlink, is_link = os.lstat, os.readlink, stat.S_ISLNK
    while rest:
        part = rest.pop()
        if isinstance(part, tuple):  # a link's target is resolved: the link leads here
            seen[part[0]] = here
            continue
        if not part or part == ".":
            continue
        if part == "..":
            here = here[: here.rindex(sep)] or sep
            continue
        step = here + part if here == sep else here + sep + part
        try:
            link = is_link(lstat(step).st_mode)
        except OSError:
            link = False
        if not link:
            here = step
            continue
        if step in seen:
            led = seen[step]
            if led is None:  # a loop: realpath leaves it, and the rest, as written
                left = [p for p in reversed(rest) if isinstance(p, str)]
                return os.path.normpath(sep.join([step, *left])), True
            here = led
            continue
        target = readlink(step)
        seen[step] = None
        rest.append((step,))
        if target.startswith(sep):
            here = sep
        rest.extend(target.split(sep)[::-1])
    return here, False


def goes_round(path: Path) -> bool:
    """Whether following the symlinks on the way to ``path`` comes back to a link still
    being followed: a loop, which no number of links gets out of. :func:`real_path`'s
    walk: each link is followed once, from the folders already resolved, and one met
    again once followed (``l/../l``) leads where it led; a dead end (nothing there, no
    permission) is no link, and a link gone while it is read (or the current directory,
    for a relative path) leaves no loop found."""
    try:
        return _walk(path)[1]
    except OSError:
        return False


def no_project_message(path: Path | str) -> str:
    """Refusal for a project directory that does not exist (it is never created)."""
    return f"No such project directory: {display_path(path)}"


def shared_store_message(project_root: Path, global_store: Path) -> str:
    """Refusal for a project whose store is the global store's file (an agent dir in ``.pi``)."""
    folder = display_path(project_folder(project_root))
    return (
        f"Refusing to use {folder}: its memory.md is the global memory file "
        f"({display_path(global_store)}); project and global memory must be two files."
    )


def hard_linked_store_message(project_root: Path, global_store: Path) -> str:
    """Refusal for a project whose ``.pi/memory.md`` is a hard link to the global store (one
    file, one device and inode, under two names): as :func:`shared_store_message`."""
    folder = display_path(project_folder(project_root))
    return (
        f"Refusing to use {folder}: its memory.md is a hard link to the global memory file "
        f"({display_path(global_store)}); project and global memory must be two files."
    )


def project_folder_refusal(
    project_root: Path, real: str | None = None, global_store: Path | None = None
) -> str | None:
    """Why the project store may not be used at all, or ``None`` when it may (SPEC §1).

    Given the ``global_store``, a project store that is that very file (an agent dir
    set to the project's ``.pi``, or to a link to it; or a ``memory.md`` hard-linked to
    the global one, :func:`hard_linked_store_message`) is refused too, as one whose
    ``.pi`` leads out of the project is: the scopes never become one file, so a note
    is never written twice, "moved" into its own file, or recalled twice. The file
    stays usable as the global store, which the agent dir names explicitly.

    A cloned repository can ship ``.pi`` as a symlink (git keeps symlinks). When
    the real path of ``<project-root>/.pi`` is not inside the real path of the
    root, the project store is not read, recalled or written: otherwise a
    clone could make the tool write anywhere, or make the project and global
    scopes one file. A symlink that stays inside the project is fine, and so is
    a dangling one that would; a dangling one leading out is refused, and so is
    one that cannot be resolved at all (a loop, refused as one: :func:`symlink_loop_message`;
    or a chain of more links than the system follows, :func:`symlink_chain_message`):
    only what resolves inside is used.

    ``real`` is the folder's real path when the caller resolved it itself (the
    write path does, for the folder it holds open and locked); by default it
    is resolved here. This is the one place the rule is decided.
    """
    outside = _outside_refusal(project_root, real)
    if outside is not None or global_store is None:
        return outside
    if real is None:
        real = real_path(project_folder(project_root))
    store = os.path.join(real, STORE_FILE_NAME)
    if store == canonical_path(global_store) or _same_folder(real, global_store.parent):
        return shared_store_message(project_root, global_store)
    if _hard_linked(store, global_store):
        return hard_linked_store_message(project_root, global_store)
    return None


def shares_global_file(project_root: Path, global_store: Path, refusal: str | None) -> bool:
    """Whether ``refusal`` (:func:`project_folder_refusal`'s, given the global store) says
    the project store is the global store's file, in one folder or by a hard link."""
    return refusal is not None and refusal in (
        shared_store_message(project_root, global_store),
        hard_linked_store_message(project_root, global_store),
    )


def _hard_linked(store: str, global_store: Path) -> bool:
    """Whether the project ``store`` (its folder's real path given) is the global store's
    file under another name: a hard link, one device and inode. A symlink at either path
    is no such name (it is refused as a symlink). One ``lstat`` of the project store, a
    second only when it has more than one link."""
    try:
        mine = os.lstat(store)
        if mine.st_nlink < 2 or not stat.S_ISREG(mine.st_mode):
            return False
        other = os.lstat(global_store)
    except (OSError, ValueError):
        return False  # missing (yet): one file only once it is there
    return stat.S_ISREG(other.st_mode) and (mine.st_dev, mine.st_ino) == (
        other.st_dev,
        other.st_ino,
    )


def names_global_store(path: Path, global_store: Path) -> bool:
    """Whether ``path``, as written, is the global store as the agent dir names it.

    The agent dir is the user's own explicit choice: its ``memory.md`` is the global
    store wherever it lives, also through a project's ``.pi`` that leads out of the
    project (an agent dir that *is* that ``.pi``). Such a path is never judged as that
    project's refused store; the project scope is refused instead
    (:func:`shared_file_refusal`).
    """
    return os.path.abspath(path) == os.path.abspath(global_store)


def shared_file_refusal(project_root: Path, global_store: Path, refusal: str | None) -> str | None:
    """Why ``project_root``'s scope is refused when its store is the global store's file,
    else ``None``; ``refusal`` is :func:`project_folder_refusal`'s, given the global store.

    The one rule for "both scopes name one file" (SPEC §1: they never become one), which
    every entry point follows (``list``/``add``/``inject``/``doctor``, ``check`` with and
    without FILE, the editor's documents and commands, the MCP server): the file is the
    global store and works as one; the project scope is refused, with ``refusal``, and a
    file report or open document of that file shows it. One file means either

    - the agent dir is the project's ``.pi`` under another path or the same one (a link
      to it, a bind mount; :func:`shared_store_message`), or the project's ``memory.md``
      is a hard link to the global one (:func:`hard_linked_store_message`), or
    - the agent dir is, as written, the project's ``.pi``, which leads out of the project
      (the refusal is then the ``outside`` one, as for any ``.pi`` leading out).

    A ``.pi`` that leads out to an agent dir named by another path (its real one, say)
    is not one file here: the project store is a link, refused, reported beside the
    global store under its own path.
    """
    if refusal is None:
        return None
    if shares_global_file(project_root, global_store, refusal):
        return refusal
    if names_pi_folder(global_store.parent, project_root):
        return refusal
    return None


def names_pi_folder(folder: Path, project_root: Path) -> bool:
    """Whether ``folder`` (an agent dir) names ``project_root``'s ``.pi`` entry itself:
    ``<root>/.pi`` with the folders above the ``.pi`` resolved, the ``.pi`` not followed
    (where it leads is another path: a store of its own). The root may be spelled through
    a symlinked folder (a linked home, macOS's ``/tmp``) as the project root never is."""
    named = os.path.abspath(folder)
    if os.path.basename(named) != ".pi":
        return False
    try:
        holder = real_path(os.path.dirname(named))
    except ValueError:
        return False
    return os.path.join(holder, ".pi") == os.path.join(_real_folder(project_root), ".pi")


def _same_folder(real: str, other: Path) -> bool:
    """Whether ``real`` and ``other`` are one directory under two paths that no symlink
    explains: a bind mount of the project's ``.pi`` as the agent dir, or ``.PI`` on a
    case-insensitive disk (macOS). Its ``memory.md`` is then one file for both scopes.
    Two ``stat`` calls; a folder that does not exist (yet) is no other's."""
    try:
        return os.path.samefile(real, other)
    except (OSError, ValueError):
        return False


def _outside_refusal(project_root: Path, real: str | None) -> str | None:
    """:func:`project_folder_refusal`'s first rule: the ``.pi`` folder leads out."""
    if real is None:
        folder = project_folder(project_root)
        try:
            if not stat.S_ISLNK(os.lstat(folder).st_mode):
                return None  # a real folder in the root is inside it (one lstat: hot path)
        except (OSError, ValueError):
            return None  # missing: nothing leads anywhere, and a write creates it in place
        links = too_many_links(folder)
        if links is not None:  # (judged first: nothing opens a loop or a chain)
            return (symlink_loop_message if links == "loop" else symlink_chain_message)(
                project_root
            )
        real = real_path(folder)
    if is_within(real, real_path(project_root)):
        return None
    return outside_project_message(project_root, real)


def refused_project_store(path: Path) -> tuple[Path, str] | None:
    """The project root and refusal when ``path`` is, as written, a refused project store.

    ``path`` names ``<root>/.pi/memory.md`` of a project whose ``.pi`` leads out
    of it. Such a path must be judged as written: its canonical form is
    wherever the link leads (the global store, when it leads to the agent dir).
    """
    if not is_pi_memory(path):
        return None
    start = path.parent.parent
    through = refused_folder_on_the_way(start)
    if through is not None:
        return through  # `<root>/.pi/…/.pi/memory.md`: in a refused `.pi` further up
    root = project_root_for(start)
    if root != Path(real_path(start)):
        return None  # a `.pi/memory.md` below the root is not the store at all
    refusal = project_folder_refusal(root)
    return None if refusal is None else (root, refusal)


def refused_folder_on_the_way(path: Path) -> tuple[Path, str] | None:
    """The project root and refusal when ``path``, as written, is or lies under the
    ``.pi`` folder of a project whose ``.pi`` leads out of it (SPEC §1).

    A command's ``uri`` may name any file in a workspace folder, so one in its project's
    ``.pi`` too. Where that ``.pi`` leads out, the path's canonical form is wherever the
    link leads (another folder, the agent dir): judged there, it would pick the project
    out there and create a store in it, written through the refused ``.pi``. Judged as
    written, it names this project, whose store is refused. The outermost such ``.pi``
    counts; a path without a ``.pi`` part costs nothing.
    """
    parts = path.parts
    if ".pi" not in parts:
        return None
    if not path.is_absolute():  # (as `realpath` takes it: from the current directory)
        try:
            parts = Path(os.getcwd(), path).parts
        except OSError:
            return None  # the current directory is gone: a relative path names nothing
    for i, part in enumerate(parts):
        if part != ".pi":
            continue
        holder = Path(*parts[:i])
        root = project_root_for(holder)
        if root != _real_folder(holder):
            continue  # a `.pi` below the root (or in a linked worktree) is not its `.pi`
        refusal = project_folder_refusal(root)
        if refusal is not None:
            return root, refusal
    return None


def project_start(path: Path) -> Path:
    """The folder a ``--project`` names: the project whose ``.pi`` it is in when that
    ``.pi`` leads out (:func:`refused_folder_on_the_way`), so that its store is refused
    rather than a project made where the link leads; else ``path`` itself."""
    through = refused_folder_on_the_way(path)
    return path if through is None else through[0]


def as_written(path: Path) -> Path:
    """``path`` made absolute with each ``..`` taken as the kernel takes it (the parent of
    where the path so far leads), every other symlink kept as written.

    ``os.path.abspath`` drops ``x/..`` as text: through a symlinked ``x`` that names
    another file than the one opened (``.pi/../.pi/memory.md``, with ``.pi`` a link, is
    not the project store), so the file read and the context it is checked in would
    differ. A symlink that is not followed by ``..`` stays as written, so a project
    store whose ``.pi`` leads out is still judged where it is written (SPEC §1); and a
    ``..`` inside such a ``.pi`` is taken as text, so no ``..`` leads a path out of a
    refused ``.pi`` to the project the link leads to.
    """
    given = os.fspath(path)
    if ".." not in Path(given).parts:
        return Path(os.path.abspath(given))
    try:
        here = Path(os.getcwd()) if not os.path.isabs(given) else Path("/")
    except OSError:
        return Path(os.path.abspath(given))  # the current directory is gone
    for part in Path(given).parts:
        if part == "..":
            if refused_folder_on_the_way(here) is not None:
                # A refused `.pi` stays in the path (its `..` taken as text): whatever
                # the link leads to, the path is judged in that refused `.pi`.
                here = here.parent
                continue
            try:
                here = Path(real_path(here)).parent
            except ValueError:
                here = here.parent
        elif part not in (".", os.sep):
            here = here / part
    return here


def canonical_path(path: Path) -> str:
    """``path`` with its folder's symlinks resolved; the file itself may be a symlink.

    The one way two store paths are compared: a store that is a symlink must
    stay visible as one (it is refused), so only its folder is resolved.
    """
    return os.path.join(real_path(path.parent), path.name)


def is_pi_memory(path: Path) -> bool:
    """Whether ``path`` ends in ``.pi/memory.md`` (SPEC §7 Documents)."""
    return path.name == STORE_FILE_NAME and path.parent.name == ".pi"


@record
class StorePath:
    """Which store a memory file is (SPEC §1, §7 Documents, §8 ``check``)."""

    scope: Scope | None
    """The store it is; ``None`` for a ``.pi/memory.md`` that is not its project's store."""
    root: Path | None = None
    """The project it belongs to. For the global store, ``None`` unless the file is also
    a project's ``.pi/memory.md`` (its agent dir is that ``.pi``): then that project."""
    real_store: str | None = None
    """For a ``.pi/memory.md`` that is not the store: the project's store (canonical)."""
    refusal: str | None = None
    """For a project store whose ``.pi`` leads out of the project: why it is refused. For
    the global store that is also a project's store file: why that project scope is."""


def classify_store_path(path: Path, global_store: Path) -> StorePath | None:
    """Which store ``path`` is, given the global store; ``None`` for any other file.

    In order: a ``.pi/memory.md`` in a refused ``.pi`` further up the path (as commands
    judge any path in such a ``.pi``: :func:`refused_folder_on_the_way`), that project's
    refused store; a project store whose ``.pi`` leads out of the project, judged as
    written (its canonical form is wherever the link leads, maybe the global
    store's file); the global store (with the project it is also the store of, and
    why that project scope is refused, when its path says so; reached through a refused
    ``.pi`` rather than as the agent dir names it, that project's refused store); a
    ``.pi/memory.md`` (as written, or once its folder's symlinks are resolved), which is
    its project's store or names it.

    A project's ``.pi`` is judged once (:func:`project_folder_refusal` with the global
    store: a folder leading out, and a folder that is the agent dir's under another
    path, a bind mount, in one look): this runs for every store an editor opens and
    every command's ``uri``.
    """
    if is_pi_memory(path) and not names_global_store(path, global_store):
        # In a refused `.pi` further up (`<root>/.pi/x/.pi/memory.md`): that project's
        # refused store, as written, never the store of the project the link leads to;
        # but the global store named as the agent dir names it (an agent dir `.pi` in it)
        # is the global store, as below.
        through = refused_folder_on_the_way(path.parent.parent)
        if through is not None:
            return StorePath("project", through[0], refusal=through[1])
    found = _classify(path, global_store)
    if (
        found is not None
        and found.scope == "global"
        and found.refusal is None
        and not is_pi_memory(path)
        and not names_global_store(path, global_store)
    ):
        # The global store's file reached through a project's `.pi` that leads out (to
        # the agent dir's folder): judged as written, as any path in that `.pi`. Named
        # as the agent dir names it, it is the global store, whatever links that takes.
        through = refused_folder_on_the_way(path.parent)
        if through is not None:
            return StorePath("project", through[0], refusal=through[1])
    return found


def _classify(path: Path, global_store: Path) -> StorePath | None:
    """:func:`classify_store_path` but for a refused ``.pi`` further up the path."""
    written = _written_root(path)
    refusal = None
    if written is not None and written[1] is not None:
        root = written[1]
        refusal = project_folder_refusal(root, global_store=global_store)
        if refusal is not None and shared_file_refusal(root, global_store, refusal) is None:
            return StorePath("project", root, refusal=refusal)  # leads out: judged as written
    canon = canonical_path(path)
    if canon == canonical_path(global_store):
        if written is not None and written[1] is not None and refusal is not None:
            # The root's `.pi/memory.md` as written, which is the global store's file
            # (the agent dir is this `.pi`, or names it as written where it leads out):
            # the global store, with the project scope's refusal.
            return StorePath("global", written[1], refusal=refusal)
        return _global_store(Path(canon), global_store)
    if written is not None:
        root = written[0]
        if written[1] is not None:
            # Its own root's store as written (canonical: the same file), judged above.
            if refusal is not None:
                # The agent dir is this `.pi` under a path no symlink explains (a bind
                # mount, `.PI` on a case-insensitive disk): the global store's file.
                return StorePath("global", root, refusal=refusal)
            return StorePath("project", root)
    elif is_pi_memory(Path(canon)):
        root = project_root_for(Path(canon).parent.parent)
    else:
        return None
    store = canonical_path(project_store_path(root))
    if canon != store:
        return StorePath(None, root, real_store=store)
    shared = shared_file_refusal(
        root, global_store, project_folder_refusal(root, global_store=global_store)
    )
    if shared is not None:
        return StorePath("global", root, refusal=shared)
    return StorePath("project", root)


def _written_root(path: Path) -> tuple[Path, Path | None] | None:
    """For a ``path`` that ends in ``.pi/memory.md`` as written: the project root holding
    it, and that root again when the path is that root's own store (else ``None``: a
    ``.pi/memory.md`` below the root, or in a linked worktree). ``None`` for any other path."""
    if not is_pi_memory(path):
        return None
    holder = path.parent.parent
    root = project_root_for(holder)
    return root, (root if root == _real_folder(holder) else None)


def _real_folder(path: Path) -> Path:
    """``path`` canonical (as :func:`project_root_for` resolves its start)."""
    try:
        return Path(real_path(path))
    except ValueError:
        return Path(os.path.abspath(path))


def _global_store(canon: Path, global_store: Path) -> StorePath:
    """The global store, at the canonical ``canon``; when that is also a project's
    ``.pi/memory.md`` (an agent dir that links to the project's ``.pi``, or is where
    ``.pi`` links), that project and why its scope is refused, so that every entry
    point that takes this path reports what ``check`` of that project does (SPEC §1).
    (A path that is such a store as written is judged by :func:`classify_store_path`.)

    First the project whose ``.pi`` the agent dir names as written (an agent dir
    ``<root>/.pi`` whose ``.pi`` leads out: ``canon`` is out there), so that every
    spelling of the file is the global store of that one project, its scope refused."""
    named = Path(os.path.abspath(global_store))
    if is_pi_memory(named):
        holder = named.parent.parent
        root = project_root_for(holder)
        if root == _real_folder(holder):
            refusal = project_folder_refusal(root, global_store=global_store)
            refusal = shared_file_refusal(root, global_store, refusal)
            if refusal is not None:
                return StorePath("global", root, refusal=refusal)
    if is_pi_memory(canon):
        holder = canon.parent.parent
        root = project_root_for(holder)
        if root == holder:  # (a `.pi/memory.md` below the root is not a project store)
            refusal = project_folder_refusal(root, global_store=global_store)
            if refusal is not None:
                return StorePath("global", root, refusal=refusal)
    return StorePath("global")


def is_within(path: str, folder: str) -> bool:
    """Whether the canonical ``path`` is ``folder`` or lies under it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def project_root_for(start: Path) -> Path:
    """Return the root of the *main* working tree of the repository holding ``start``.

    ``start`` may be a file or a directory; symlinks are resolved first. A
    subdirectory and every linked worktree resolve to the same root; a
    submodule is its own root; outside any repository the starting directory
    (the parent of a file) is the root. Unreadable or malformed ``.git``
    files are skipped as if absent, so this never raises for them. A ``.git``
    file naming a layout git would not accept (see
    :func:`_main_worktree_for_gitdir`) cannot move the root elsewhere.
    """
    here = _start_folder(start)
    # Resolved once: each resolution lstat's every component of the path (it ran
    # three times per CLI command, with the CLI's own and repository_root_for's).
    return _repository_root_from(here) or here


def repository_root_for(start: Path) -> Path | None:
    """:func:`project_root_for` when a repository holds ``start``; ``None`` outside any."""
    return _repository_root_from(_start_folder(start))


def _repository_root_from(here: Path) -> Path | None:
    """The repository root for the canonical folder ``here`` (:func:`_start_folder`)."""
    for folder in (here, *here.parents):
        root = _root_from_git_entry(folder)
        if root is not None:
            return root
    return None


def _start_folder(start: Path) -> Path:
    """``start`` canonical, or its folder when it is a file."""
    try:
        here = Path(real_path(start))
    except ValueError:
        # A NUL byte names nothing on disk; its parents may still hold a repository.
        here = Path(os.path.abspath(start))
    return here.parent if _is_existing_non_directory(here) else here


# -- reading small files -------------------------------------------------------


@record
class SmallText:
    """The outcome of reading a small text file: errors are values, not exceptions.

    ``text`` is ``None`` when the file is missing (``error`` is then ``None``
    too) or could not be used (``error`` says why, as a phrase that follows
    the path: ``"is a directory"``).
    """

    text: str | None
    error: str | None = None

    @property
    def missing(self) -> bool:
        """The file does not exist (a normal state, not a problem)."""
        return self.text is None and self.error is None


class _Unusable(Exception):
    """A file exists but cannot be used; the message follows its path."""


def read_small_text(path: Path, limit: int) -> SmallText:
    """Read a UTF-8 text file of at most ``limit`` bytes without ever raising.

    Missing (including a dangling symlink or a missing parent) is
    ``SmallText(None)``; a directory, a non-regular file (a FIFO would block),
    a file over ``limit``, a permission error or invalid UTF-8 is reported in
    ``error``. A leading byte order mark is kept: the caller decides.
    """
    try:
        data = _read_capped(path, limit)
    except (FileNotFoundError, NotADirectoryError):
        return SmallText(None)
    except _Unusable as exc:
        return SmallText(None, str(exc))
    except OSError as exc:
        return SmallText(None, f"cannot be read ({exc.strerror or exc})")
    except ValueError:  # a NUL byte in the path: no such file can exist
        return SmallText(None)
    try:
        return SmallText(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return SmallText(None, f"is not valid UTF-8 (first bad byte at offset {exc.start})")


def _read_capped(path: Path, limit: int) -> bytes:
    """Return the bytes of a regular file, refusing anything over ``limit``."""
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise _Unusable("is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise _Unusable("is not a regular file")
    if info.st_size > limit:
        raise _Unusable(f"is {info.st_size} bytes, larger than the {limit}-byte limit")
    with open(path, "rb") as handle:
        # Read one byte past the limit: the file may have grown since the stat.
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _Unusable(f"is larger than the {limit}-byte limit")
    return data


# -- the project root ----------------------------------------------------------


def _root_from_git_entry(folder: Path) -> Path | None:
    """Return the main worktree root if ``folder`` holds a usable ``.git``, else ``None``."""
    entry = folder / ".git"
    try:
        info = os.stat(entry)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(info.st_mode):
        # A normal repository: this folder is its main worktree.
        return folder
    if not stat.S_ISREG(info.st_mode):
        return None
    gitdir = _gitdir_from_file(entry)
    if gitdir is None:
        return None  # malformed or unreadable: not a repository marker
    return _main_worktree_for_gitdir(gitdir, folder)


def _gitdir_from_file(entry: Path) -> Path | None:
    """Parse a ``.git`` file (``gitdir: <path>``) into an absolute, canonical git dir."""
    content = _read_git_text(entry)
    if content is None:
        return None
    first_line = content.split("\n", 1)[0].rstrip("\r")
    prefix = "gitdir:"
    if not first_line.startswith(prefix):
        return None
    target = first_line[len(prefix) :].strip()
    if not target:
        return None
    # Git writes relative paths relative to the folder holding the `.git` file.
    return _resolve(entry.parent, target)


def _main_worktree_for_gitdir(gitdir: Path, holder: Path) -> Path:
    """Return the main worktree for a git dir named by the ``.git`` file in ``holder``.

    Without a ``commondir`` the git dir is a repository of its own (a
    submodule, or ``git init --separate-git-dir``) whose worktree is
    ``holder``. With one, ``holder`` is a linked worktree and the main
    worktree is found from the common git dir, but only for a layout git
    itself writes (:func:`_is_linked_worktree`). A ``.git`` file is any text
    an archive can ship: naming another layout, it would move the root (and
    so the store and the trust decision) to a folder of its choosing, so it
    leaves ``holder`` as the root.
    """
    if not os.path.isdir(gitdir):
        # A dangling link (the main repository moved): the marker still says
        # "a repository starts here", and this folder is the best root we have.
        return holder
    common_text = _read_git_text(gitdir / "commondir")
    if common_text is None:
        return holder
    common_line = common_text.split("\n", 1)[0].rstrip("\r")
    if not common_line:
        return holder
    # os.path.join keeps an absolute commondir as it is.
    common = _resolve(gitdir, common_line)
    if common is None or not _is_linked_worktree(gitdir, common, holder):
        return holder
    worktree = _core_worktree(common)
    if worktree is not None:
        # A submodule's git dir (`.git/modules/x`) names its worktree this way.
        return worktree
    if common.name == ".git":
        return common.parent
    # A bare repository with linked worktrees has no main worktree.
    return holder


def _is_linked_worktree(gitdir: Path, common: Path, holder: Path) -> bool:
    """Whether ``gitdir`` is a linked worktree of the repository ``common``, checked out at ``holder``.

    What git implies: the common dir is a git dir (it holds ``HEAD``); a linked
    worktree's git dir is ``<common>/worktrees/<name>``; and its ``gitdir``
    file, when there is one, names the worktree's ``.git`` file. A fake git
    dir whose ``commondir`` is ``.`` or another person's repository fails here.
    """
    if gitdir.parent != common / "worktrees" or not os.path.isfile(common / "HEAD"):
        return False
    back = _read_git_text(gitdir / "gitdir")
    if back is None:
        return True  # hand-made and older layouts lack the link back; the layout suffices
    named = _resolve(gitdir, back.split("\n", 1)[0].rstrip("\r"))
    return named is not None and named == _resolve(holder, ".git")


def _core_worktree(git_dir: Path) -> Path | None:
    """Return ``core.worktree`` from ``<git_dir>/config`` when it is that git dir's worktree.

    It counts only when the folder it names holds a ``.git`` file naming
    ``git_dir`` back (a submodule's git dir, ``.git/modules/x``): otherwise
    any config could send the root to ``/`` or the home directory.
    """
    text = _read_git_text(git_dir / "config")
    if text is None:
        return None
    value = git_config_value(text, "core", "worktree")
    if not value:
        return None
    # Git resolves a relative core.worktree against the git dir.
    path = _resolve(git_dir, value)
    if path is None or not os.path.isfile(path / ".git"):
        return None
    return path if _gitdir_from_file(path / ".git") == git_dir else None


def _resolve(base: Path, text: str) -> Path | None:
    """``text`` (a path read from git metadata) made absolute against ``base``, canonical.

    ``None`` when it cannot name a path at all (a NUL byte).
    """
    try:
        return Path(real_path(os.path.join(base, text)))
    except (OSError, ValueError):
        return None


def _read_git_text(path: Path) -> str | None:
    """Read a small git metadata file, decoding paths as the OS does; ``None`` if unusable."""
    try:
        data = _read_capped(path, _GIT_FILE_LIMIT)
    except (OSError, ValueError, _Unusable):
        return None
    return os.fsdecode(data)


def git_config_value(text: str, section: str, key: str) -> str | None:
    """Return the last value of ``section.key`` in git-config ``text``, or ``None``.

    A small reader for the subset git writes itself: ``[section]`` headers
    (case-insensitive, no subsection), ``key = value`` lines, ``#``/``;``
    comments, double quotes and the ``\\\\ \\" \\n \\t`` escapes.
    """
    wanted_section = section.lower()
    wanted_key = key.lower()
    current: str | None = None
    found: str | None = None
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            close = line.find("]")
            header = line[1:close].strip() if close > 0 else ""
            # `[core "x"]` is a subsection, not `[core]`.
            current = None if '"' in header or " " in header else header.lower()
            line = line[close + 1 :].strip() if close > 0 else ""
            if not line or line[0] in "#;":
                continue
        if current != wanted_section:
            continue
        name, sep, rest = line.partition("=")
        if name.strip().lower() != wanted_key:
            continue
        found = _git_config_unquote(rest) if sep else "true"
    return found


def _git_config_unquote(raw: str) -> str:
    """Decode a git-config value: quotes, escapes, and a trailing comment."""
    escapes = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "b": "\b"}
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            out.append(escapes.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip()


# -- small helpers -------------------------------------------------------------


def _is_existing_non_directory(path: Path) -> bool:
    try:
        return not stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        # Missing: treat it as the directory to start from.
        return False


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _expand_home(text: str, env: Mapping[str, str]) -> str:
    """Expand a leading ``~`` (or ``~user``) to a home directory."""
    if text == "~" or text.startswith(("~/", "~" + os.sep)):
        return str(_home(env)) + text[1:]
    return os.path.expanduser(text)
