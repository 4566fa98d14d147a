"""Deterministic memory stores for the benchmarks.

Every store is generated from a seed, so two runs (and two machines) measure the same
bytes.  A store is a Pi memory file: the header line, a blank line, then one ``- note``
line per note.  Notes are 20-200 characters of varied text (ASCII, emoji outside the
BMP, CJK), about 3% are near-duplicates of an earlier note (same text with a different
case or trailing punctuation: the same near-duplicate key) and about 1% are paraphrases
(one word changed, inserted or dropped: a fuzzy match the key does not catch).

Two more stores stress what grows with the store rather than with the edit:

- ``paraphrase``: 4,500 notes of which over 1,000 are variants of a few hundred templates
  (one word swapped for a synonym, dropped or added), as an agent writes when it saves the
  same lesson again and again; the ``similar`` pass finds over 700 pairs, so every publish
  carries that many hints;
- ``10000``: 10,000 short notes (12-30 characters, 3% near-duplicates) under the 256 KiB cap, the most notes a
  store can hold at a realistic length.

A *tree scenario* (``4500tree``) repeats a store in a real-sized project (issue 13): the
same notes but one in a hundred, which runs a script (``pnpm run build``, ``make lint``;
one in five of those is defined nowhere), in a workspace of 3,000 source files with the
paths the notes mention (but ~3%), a ``package.json`` with scripts, a Makefile, and
``AGENTS.md`` / ``CLAUDE.md`` of 100 lines (``AGENTS.md`` repeats ten of the notes), so
``stale-path``, ``stale-script`` and ``instruction-duplicate`` all find something.

``python -m bench.workload [--out DIR]`` writes the stores and prints their sizes.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"
SIZE_CAP = 262_144
# The big store stays a little under the cap so that the memory.add phase (and the
# characters typed into the buffer) never push it over the limit.
BIG_STORE_TARGET_BYTES = 258_000
DEFAULT_SEED = 20_241_202

# name -> note count
STORE_SIZES: dict[str, int] = {
    "100": 100,
    "1000": 1_000,
    "4500": 4_500,
    "paraphrase": 4_500,
    "10000": 10_000,
}
PARAPHRASE_VARIANTS = 1_100
"""Variants in the ``paraphrase`` store (the issue asks for at least 1,000)."""

# scenario -> the store it repeats, in a real-sized project (issue 13)
TREE_STORES: dict[str, str] = {"4500tree": "4500"}
TREE_FILES = 3_000
"""Source files of a tree scenario's project (a few hundred more hold the mentioned paths)."""
TREE_SCRIPT_EVERY = 100
"""A tree scenario's store has a note running a script in place of every 100th note."""
TREE_REPEATS = 10
"""Notes of a tree scenario's store that its AGENTS.md says again (``instruction-duplicate``)."""
CHECKS_OFF: dict[str, str] = {f"{tree}-off": tree for tree in TREE_STORES}
"""scenario -> the tree scenario it repeats with SPEC §13's four codes turned off: issue
13's speed criterion is "the same store without these checks", so the store, its
duplicates and the project around it are the same and only the checks differ."""
OFF_OF: dict[str, str] = {tree: off for off, tree in CHECKS_OFF.items()}
"""tree scenario -> its :data:`CHECKS_OFF` scenario."""
STORES: tuple[str, ...] = (*STORE_SIZES, *TREE_STORES, *CHECKS_OFF)
"""Every name ``--stores`` accepts; a tree scenario runs only when asked for."""


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_TECH = _split(
    "pnpm npm yarn uv pip poetry cargo make ruff mypy pytest jest vitest docker compose "
    "postgres redis sqlite kafka nginx terraform helm kubectl git rebase squash branch "
    "release staging prod ci pipeline cache lockfile migration schema fixture snapshot "
    "endpoint handler router middleware logger tracing metrics alert dashboard cron "
    "worker queue retry timeout backoff token secret vault config env flag feature "
    "monorepo package module import export typing lint format build bundle wasm node "
    "python rust go java kotlin swift typescript react vue svelte tailwind vite webpack "
    "esbuild storybook playwright cypress selenium grpc protobuf graphql rest openapi "
    "json yaml toml csv parquet s3 bucket cdn dns tls cert oauth sso session cookie "
    "header payload batch stream shard replica index vacuum backup restore rollback "
    "deploy canary hotfix changelog semver tag commit review approve merge conflict"
)
_WORDS = _split(
    "always never prefer avoid remember check run use keep set add remove update the "
    "a an before after when unless only also first then every each all some most "
    "local remote shared private public main default custom legacy new old fast slow "
    "small large tests docs scripts tools folder file path repo project team user "
    "owner reviewer on-call weekend night morning monday friday sprint quarter "
    "because since otherwise instead so that which with without into from over under "
    "works breaks fails passes hangs leaks flakes times out needs wants expects "
    "returns throws logs writes reads sends calls waits blocks retries skips ignores "
    "is are was be been must should can may will does not no yes ok fine careful "
    "manually automatically carefully quickly slowly twice once again later sooner"
)
_ENV = _split(
    "DATABASE_URL REDIS_URL API_TOKEN AWS_PROFILE NODE_ENV RUST_LOG PYTHONPATH "
    "GITHUB_TOKEN SENTRY_DSN LOG_LEVEL PORT HOME TZ LANG CI DEBUG"
)
_PATHS = _split(
    "src/ lib/ app/ tests/ scripts/ docs/ infra/ deploy/ .github/workflows/ "
    "packages/core/ packages/web/ services/api/ services/worker/ tools/ vendor/"
)
_EMOJI = _split(
    "\U0001f680 \U0001f40d \U0001f4e6 \U0001f525 \U0001f4a1 \U0001f9ea \U0001f512 "
    "\U0001f44d \U0001f389 \U0001f41b \u2705 \u2728 \U0001f6a7 \U0001f9f9"
)
_CJK = _split(
    "数据库 测试 部署 缓存 配置 接口 日志 服务器 环境变量 不要 使用 需要 "
    "設定 テスト ユーザー 注意 必ず 確認 환경 변수 배포 테스트"
)
_SYNONYMS: dict[str, str] = {
    "always": "consistently",
    "never": "do not ever",
    "prefer": "favour",
    "avoid": "skip",
    "run": "execute",
    "use": "prefer",
    "check": "verify",
    "remove": "delete",
    "update": "refresh",
    "fails": "breaks",
    "fast": "quick",
    "slow": "sluggish",
    "large": "big",
    "small": "tiny",
    "tests": "test suite",
    "before": "prior to",
    "after": "following",
    "needs": "requires",
}
_TRAILING = (".", "!", "?", ":", "...", ";")


@dataclass(frozen=True)
class Workspace:
    """A temporary git workspace with one project store and an agent dir."""

    root: Path
    agent_dir: Path
    store_path: Path
    global_store_path: Path

    @property
    def root_uri(self) -> str:
        return self.root.as_uri()

    @property
    def store_uri(self) -> str:
        return self.store_path.as_uri()

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """Environment for a server or CLI run: the agent dir never is the user's."""
        env = dict(base)
        env["PI_CODING_AGENT_DIR"] = str(self.agent_dir)
        env["HOME"] = str(self.agent_dir.parent / "home")
        env.pop("XDG_CONFIG_HOME", None)
        # Bytecode as an installed package has it: with PYTHONDONTWRITEBYTECODE (set on some
        # machines, this one among them) an editable install compiles every module again
        # on every start, which no user's install does (pip compiles at install time).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return env


def _key(text: str) -> str:
    """The near-duplicate key of SPEC §2 (for generation only)."""
    folded = " ".join(text.split()).lower()
    return folded.rstrip(".!?,;:").strip()


def _sample_length(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.75:
        return rng.randint(20, 50)
    if roll < 0.96:
        return rng.randint(50, 100)
    return rng.randint(100, 200)


def _token(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(_WORDS)
    if roll < 0.80:
        return rng.choice(_TECH)
    if roll < 0.86:
        return rng.choice(_ENV)
    if roll < 0.91:
        return rng.choice(_PATHS) + rng.choice(_TECH) + rng.choice((".py", ".ts", ".md", ""))
    if roll < 0.96:
        return str(rng.randint(2, 9999))
    return rng.choice(_TECH) + "-" + rng.choice(_TECH)


def _fresh_note(rng: random.Random) -> str:
    length = _sample_length(rng)
    words: list[str] = []
    with_emoji = rng.random() < 0.08
    with_cjk = rng.random() < 0.08
    while len(" ".join(words)) < length:
        words.append(_token(rng))
    if with_cjk:
        at = rng.randrange(len(words) + 1)
        words.insert(at, "".join(rng.choice(_CJK) for _ in range(rng.randint(1, 3))))
    if with_emoji:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_EMOJI))
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    if rng.random() < 0.3:
        text += "."
    return text[:200].rstrip()


def _near_duplicate(rng: random.Random, note: str) -> str:
    """Same near-duplicate key, different surface: case and trailing punctuation."""
    base = note.rstrip(".!?,;:")
    roll = rng.random()
    if roll < 0.35:
        variant = base.lower()
    elif roll < 0.55:
        variant = base.upper()
    elif roll < 0.75:
        variant = base.swapcase()
    else:
        variant = base
    variant += rng.choice(_TRAILING)
    if variant == note:
        variant = base + "!"
    return variant if len(variant) <= 200 else base.swapcase()[:200]


def _paraphrase(rng: random.Random, note: str) -> str | None:
    """One word swapped for a synonym, inserted or dropped: close, but another key."""
    words = note.split(" ")
    if len(words) < 5:
        return None
    candidates = [i for i, w in enumerate(words) if w.lower() in _SYNONYMS]
    roll = rng.random()
    if candidates and roll < 0.6:
        i = rng.choice(candidates)
        words[i] = _SYNONYMS[words[i].lower()]
    elif roll < 0.8:
        words.insert(rng.randrange(1, len(words)), rng.choice(("really", "still", "also")))
    else:
        del words[rng.randrange(1, len(words))]
    return " ".join(words)


def generate_notes(count: int, seed: int = DEFAULT_SEED, max_bytes: int | None = None) -> list[str]:
    """``count`` notes, deterministic for (count, seed); the rendered store fits ``max_bytes``."""
    rng = random.Random(f"{seed}:{count}")
    notes: list[str] = []
    keys: set[str] = set()
    near_duplicates = max(1, round(count * 0.03)) if count >= 20 else 0
    paraphrases = max(1, round(count * 0.01)) if count >= 20 else 0
    fresh = count - near_duplicates - paraphrases
    while len(notes) < fresh:
        note = _fresh_note(rng)
        key = _key(note)
        if key in keys:
            continue
        keys.add(key)
        notes.append(note)
    extra: list[str] = []
    originals = list(notes)
    while len(extra) < near_duplicates:
        extra.append(_near_duplicate(rng, rng.choice(originals)))
    made = 0
    while made < paraphrases:
        phrase = _paraphrase(rng, rng.choice(originals))
        if phrase is None or not 20 <= len(phrase) <= 200 or _key(phrase) in keys:
            continue
        keys.add(_key(phrase))
        extra.append(phrase)
        made += 1
    # Scatter the variants after their originals' positions, deterministically.
    for note in extra:
        notes.insert(rng.randrange(len(notes) // 4, len(notes) + 1), note)
    if max_bytes is not None:
        _fit(notes, max_bytes)
    return notes


def _fit(notes: list[str], max_bytes: int) -> None:
    """Shorten the longest notes until the rendered store fits ``max_bytes``."""
    size = len(render_store(notes).encode())
    while size > max_bytes:
        i = max(range(len(notes)), key=lambda j: len(notes[j].encode()))
        shorter = notes[i][: max(20, len(notes[i]) // 2)].rstrip()
        size -= len(notes[i].encode()) - len(shorter.encode())
        notes[i] = shorter


def render_store(notes: list[str]) -> str:
    """The file text: header, blank line, one ``- note`` line per note."""
    return HEADER + "\n\n" + "".join(f"- {note}\n" for note in notes)


_TEMPLATE_OPENERS = _split(
    "Always Never Remember Prefer Avoid Before After When Check Run Use Keep"
)


def _template(rng: random.Random) -> str:
    """A lesson an agent would save: 45-90 characters of words it can paraphrase."""
    length = rng.randint(45, 90)
    words = [rng.choice(_TEMPLATE_OPENERS)]
    while len(" ".join(words)) < length:
        # Synonym-bearing words are common, so a swap is usually possible.
        if rng.random() < 0.3:
            words.append(rng.choice(tuple(_SYNONYMS)))
        else:
            words.append(_token(rng))
    return " ".join(words)


def _variant(rng: random.Random, template: str) -> str | None:
    """One word of ``template`` swapped for a synonym, dropped, or one word added."""
    return _paraphrase(rng, template)


def generate_paraphrase_notes(
    count: int, variants: int, seed: int = DEFAULT_SEED, max_bytes: int | None = None
) -> list[str]:
    """``count`` notes of which ``variants`` are paraphrases of templates among them.

    Each template gets one to three variants, scattered after it; the rest of the store
    is the ordinary mix (:func:`generate_notes`), so the store still has duplicates,
    emoji and CJK. Variants are 20-200 characters and have keys of their own (a variant
    with another's key would be a ``duplicate``, not a paraphrase).
    """
    rng = random.Random(f"{seed}:paraphrase:{count}:{variants}")
    keys: set[str] = set()
    clusters: list[list[str]] = []
    made = 0
    while made < variants:
        template = _template(rng)
        if _key(template) in keys:
            continue
        keys.add(_key(template))
        cluster = [template]
        for _ in range(min(rng.randint(1, 3), variants - made)):
            variant = _variant(rng, template)
            if variant is None or not 20 <= len(variant) <= 200 or _key(variant) in keys:
                continue
            keys.add(_key(variant))
            cluster.append(variant)
            made += 1
        clusters.append(cluster)
    templated = sum(len(c) for c in clusters)
    notes = [
        n
        for n in generate_notes(max(0, count - templated), seed)
        if _key(n) not in keys  # a background note never collides with a template
    ]
    for cluster in clusters:
        at = rng.randrange(len(notes) + 1)
        notes.insert(at, cluster[0])
        for variant in cluster[1:]:
            notes.insert(rng.randrange(at + 1, len(notes) + 1), variant)
    while len(notes) < count:
        note = _fresh_note(rng)
        if _key(note) not in keys:
            keys.add(_key(note))
            notes.insert(rng.randrange(len(notes) + 1), note)
    del notes[count:]
    if max_bytes is not None:
        _fit(notes, max_bytes)
    return notes


_SHORT_WORDS = tuple(w for w in (*_WORDS, *_TECH) if len(w) <= 8)


def generate_short_notes(count: int, seed: int = DEFAULT_SEED) -> list[str]:
    """``count`` distinct notes of 12-30 characters (3% of them near-duplicates)."""
    rng = random.Random(f"{seed}:short:{count}")
    notes: list[str] = []
    keys: set[str] = set()
    near_duplicates = round(count * 0.03)
    while len(notes) < count - near_duplicates:
        length = rng.randint(12, 24)
        words = [rng.choice(_SHORT_WORDS)]
        while len(" ".join(words)) < length:
            words.append(rng.choice(_SHORT_WORDS))
        note = " ".join(words)[:30].rstrip()
        note = note[0].upper() + note[1:]
        if len(note) < 12 or _key(note) in keys:
            continue
        keys.add(_key(note))
        notes.append(note)
    originals = list(notes)
    for _ in range(near_duplicates):
        notes.insert(
            rng.randrange(len(notes) // 4, len(notes) + 1),
            _near_duplicate(rng, rng.choice(originals)),
        )
    return notes


def store_notes(name: str, seed: int = DEFAULT_SEED) -> list[str]:
    """The notes of the store called ``name`` (one of :data:`STORES`)."""
    name = CHECKS_OFF.get(name, name)
    if name in TREE_STORES:
        return with_script_mentions(store_notes(TREE_STORES[name], seed), TREE_SCRIPT_EVERY)
    count = STORE_SIZES[name]
    if name == "paraphrase":
        return generate_paraphrase_notes(count, PARAPHRASE_VARIANTS, seed, BIG_STORE_TARGET_BYTES)
    if name == "10000":
        notes = generate_short_notes(count, seed)
        _fit(notes, BIG_STORE_TARGET_BYTES)
        return notes
    max_bytes = BIG_STORE_TARGET_BYTES if count >= 4_000 else None
    return generate_notes(count, seed, max_bytes)


def store_text(name: str, seed: int = DEFAULT_SEED) -> str:
    """The file text of the store called ``name``."""
    text = render_store(store_notes(name, seed))
    assert len(text.encode()) <= SIZE_CAP, "a benchmark store must stay under the cap"
    return text


def global_store_text(project_text: str, seed: int = DEFAULT_SEED) -> str:
    """A small global store; two of its notes repeat project notes (cross-scope checks)."""
    rng = random.Random(f"{seed}:global")
    project_notes = [line[2:] for line in project_text.splitlines() if line.startswith("- ")]
    notes = [_fresh_note(rng) for _ in range(18)]
    notes += [rng.choice(project_notes).lower() for _ in range(2)]
    return render_store(notes)


def make_workspace(text: str, parent: Path | None = None) -> Workspace:
    """A fresh temp workspace: ``<ws>/.git/`` (empty), ``<ws>/.pi/memory.md``, an agent dir."""
    base = Path(tempfile.mkdtemp(prefix="memory-ls-bench-", dir=parent)).resolve()
    root = base / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".pi").mkdir()
    store = root / ".pi" / "memory.md"
    store.write_text(text, encoding="utf-8", newline="\n")
    agent = base / "agent"
    agent.mkdir()
    (base / "home").mkdir()
    global_store = agent / "memory.md"
    global_store.write_text(global_store_text(text), encoding="utf-8", newline="\n")
    return Workspace(root=root, agent_dir=agent, store_path=store, global_store_path=global_store)


def add_project_tree(
    root: Path,
    notes: list[str],
    files: int = 3000,
    seed: int = DEFAULT_SEED,
    repeats: Sequence[str] = (),
) -> None:
    """A real-sized project around a workspace's store (SPEC §13's speed criterion):
    ``files`` source files in nested folders, the paths ``notes`` mention (but about 3%
    of them, which stay stale), a ``package.json`` with scripts, a Makefile, and
    ``AGENTS.md`` / ``CLAUDE.md`` of about 100 lines each; ``AGENTS.md`` says each of
    ``repeats`` again, in place of one of its own lines."""
    from memory_ls.core.stale import path_mentions

    rng = random.Random(f"{seed}:tree")
    mentioned = sorted({m.text for note in notes for m in path_mentions(note)})
    for rel in mentioned:
        if rng.random() < 0.03:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("")
    for i in range(files):
        folder = root / "src" / f"pkg{i % 40}" / f"mod{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{rng.choice(_TECH)}_{i}.py").write_text("x = 1\n")
    scripts = {name: f"echo {name}" for name in DEFINED_SCRIPTS}
    scripts.update({f"task:{rng.choice(_TECH)}{i}": "true" for i in range(25)})
    (root / "package.json").write_text(json.dumps({"name": "bench", "scripts": scripts}))
    targets = [*DEFINED_TARGETS, *(f"t{i}" for i in range(16))]
    (root / "Makefile").write_text("".join(f"{t}:\n\techo {t}\n" for t in targets))
    for name in ("AGENTS.md", "CLAUDE.md"):
        lines = [f"# {name}", ""]
        lines += [f"- {_fresh_note(rng)}" for _ in range(98)]
        if name == "AGENTS.md":
            for i, repeated in enumerate(repeats[:98]):
                lines[2 + i * (98 // max(1, len(repeats)))] = f"- {repeated}"
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


DEFINED_SCRIPTS = ("build", "test", "lint", "dev", "format")
"""The ``package.json`` scripts every project tree defines (:func:`add_project_tree`)."""
DEFINED_TARGETS = ("all", "test", "lint", "bench")
"""The Makefile targets every project tree defines, besides ``t0`` ... ``t15``."""
_SCRIPT_NOTES = (
    "Run `pnpm run {script}` before opening a pull request",
    "Use `npm run {script}` after changing the schema files",
    "CI calls `make {target}` first, so keep it quick",
    "`pnpm {script}` needs the staging env loaded",
    "After a rebase run `make {target}` again or the fixtures drift",
)


def with_script_mentions(notes: list[str], every: int) -> list[str]:
    """``notes`` with every ``every``-th one (from ``every // 2``) replaced by a note that
    runs a script or make target (``pnpm run build``, ``make lint``); one in five of them
    is one no project tree defines, so ``stale-script`` has something to find. The note
    the benchmark types into (the one nearest the middle) is never replaced, and the
    count stays the same, so a session types at the same place."""
    out = list(notes)
    middle = len(out) // 2
    for n, i in enumerate(range(every // 2, len(out), every)):
        if abs(i - middle) <= 1:
            continue
        gone = n % 5 == 4
        script = f"release:legacy{n}" if gone else DEFINED_SCRIPTS[n % len(DEFINED_SCRIPTS)]
        target = f"deploy-old{n}" if gone else DEFINED_TARGETS[n % len(DEFINED_TARGETS)]
        template = _SCRIPT_NOTES[(n + n // 5) % len(_SCRIPT_NOTES)]  # each kind goes stale
        out[i] = template.format(script=script, target=target)
    return out


def make_store_workspace(name: str, parent: Path | None = None) -> Workspace:
    """A fresh workspace holding the store (or scenario) ``name``: for a tree scenario
    (:data:`TREE_STORES`, :data:`CHECKS_OFF`), inside a real-sized project
    (:func:`add_project_tree`)."""
    name = CHECKS_OFF.get(name, name)
    ws = make_workspace(store_text(name), parent)
    if name in TREE_STORES:
        notes = store_notes(name)
        repeats = notes[len(notes) // 4 :: len(notes) // TREE_REPEATS][:TREE_REPEATS]
        add_project_tree(ws.root, notes, TREE_FILES, repeats=repeats)
    return ws


def project_files(root: Path) -> int:
    """How many files the project at ``root`` holds (its ``.pi`` and ``.git`` left out)."""
    return sum(
        1
        for path in root.rglob("*")
        if path.is_file() and path.relative_to(root).parts[0] not in (".pi", ".git")
    )


def remove_workspace(ws: Workspace) -> None:
    shutil.rmtree(ws.root.parent, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the stores here as <name>.md")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    for name in STORE_SIZES:
        text = store_text(name, args.seed)
        lines = [line for line in text.splitlines() if line.startswith("- ")]
        keys = [_key(line[2:]) for line in lines]
        dupes = len(keys) - len(set(keys))
        size = len(text.encode())
        print(f"store {name}: {len(lines)} notes, {size} bytes, {dupes} near-duplicates")
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{name}.md").write_text(text, encoding="utf-8", newline="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
