"""The Helix configuration is valid TOML with the keys Helix needs (Helix itself is
not packaged for Debian 12, so it is not run here)."""

from __future__ import annotations

import tomllib

from .conftest import EDITORS


def test_helix_languages_toml() -> None:
    text = (EDITORS / "helix" / "languages.toml").read_text(encoding="utf-8")
    config = tomllib.loads(text)
    server = config["language-server"]["memory-ls"]
    assert server["command"] == "memory-ls"
    assert server["args"] == ["serve"]
    (language,) = config["language"]
    assert language["language-servers"] == ["memory-ls"]
    assert {"glob": ".pi/memory.md"} in language["file-types"]
    assert language["grammar"] == "markdown"
    readme = (EDITORS / "helix" / "README.md").read_text(encoding="utf-8")
    assert text.strip() in readme
