"""The README's editor setup sections are the files the real-editor tests run."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "config",
    [
        "editors/nvim/memory_ls.lua",
        "editors/helix/languages.toml",
        "editors/emacs/memory-ls-eglot.el",
    ],
)
def test_readme_shows_the_tested_config_verbatim(config: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = (ROOT / config).read_text(encoding="utf-8").rstrip("\n")
    assert snippet in readme, f"README.md does not show {config} verbatim"


def test_readme_install_command_matches_the_built_vsix() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    package = (ROOT / "vscode-client" / "package.json").read_text(encoding="utf-8")
    assert "code --install-extension dist/memory-ls.vsix" in readme
    assert "dist/memory-ls.vsix" in package
