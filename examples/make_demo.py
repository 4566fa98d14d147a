"""Build the sample workspace that `make demo` checks: a project and an agent dir.

The project store has an exact duplicate, a near-duplicate, a paraphrase, an
over-long note, a zero-width character, a blank bullet, a note also in the global
store, enough notes to overflow the 8 KiB recall budget, and SPEC §13's four: a
renamed file, a script no package.json defines, a note AGENTS.md already says, and
two notes that contradict each other. Every one of them shows in `memory-ls check`
(tests/cli/test_demo.py holds the README to that).
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"

WORDS = [
    "api",
    "billing",
    "cache",
    "deploy",
    "docker",
    "flag",
    "github",
    "grafana",
    "helm",
    "kafka",
    "lint",
    "migrate",
    "nginx",
    "oauth",
    "postgres",
    "queue",
    "redis",
    "release",
    "retry",
    "rollback",
    "schema",
    "secret",
    "sentry",
    "shard",
    "snapshot",
    "staging",
    "terraform",
    "timeout",
    "token",
    "tracing",
    "vault",
    "webhook",
    "worker",
    "yarn",
    "alpine",
    "bazel",
    "celery",
    "cron",
    "django",
    "fastapi",
    "graphql",
    "jest",
    "kotlin",
    "mypy",
    "pytest",
    "ruff",
    "rust",
    "swift",
    "vite",
    "webpack",
    "zod",
]


def build(root: Path) -> None:
    """Write the demo project and agent dir under ``root``."""
    if root.exists():
        shutil.rmtree(root)
    project, agent = root / "project", root / "agent"
    (project / ".git").mkdir(parents=True)
    (project / ".pi").mkdir()
    agent.mkdir()
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("app = None\n", encoding="utf-8")
    (project / "package.json").write_text(
        '{"scripts": {"build": "vite build", "test": "vitest"}}\n', encoding="utf-8"
    )
    (project / "AGENTS.md").write_text(
        "# Agents\n\n- Run the linter before every push.\n", encoding="utf-8"
    )
    rng = random.Random(7)
    notes = [
        "use pnpm, not npm",
        "the integration tests need DATABASE_URL set",
        "use pnpm, not npm",  # an exact duplicate
        "Use pnpm, not npm.",  # a near-duplicate: same key
        # A paraphrase the key does not catch; it scores 93.5, over the 85 of `similar`.
        "the integration tests need DATABASE_URL to be set",
        "run `make fmt` before committing",
        "config lives in \u200bconfig/local.yaml",
        "long: " + "this note keeps going with detail nobody will read " * 11,
        "",
        "prefer small commits with messages that say why",
        "the API server starts in `src/server.py`",  # stale-path: it is src/app.py now
        "preview components with `pnpm run storybook`",  # stale-script: no such script
        "run the linter before every push",  # instruction-duplicate: AGENTS.md says it
        "use Docker Compose for local services",  # conflict: with the next note
        "never use Docker Compose for local services",
    ]
    for i in range(160):  # filler that overflows the 8 KiB recall budget
        words = " ".join(rng.sample(WORDS, 7))
        notes.append(f"fact {i}: {words}")
    lines = [HEADER, "", "## Project notes", ""]
    lines += [f"- {n}" if n else "-   " for n in notes]
    (project / ".pi" / "memory.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (agent / "memory.md").write_text(
        f"{HEADER}\n\n- prefer small commits with messages that say why\n- answer in English\n",
        encoding="utf-8",
    )
    print(f"demo workspace: {project} (agent dir {agent})")


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "examples/demo"))
