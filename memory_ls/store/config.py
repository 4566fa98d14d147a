"""Reading the configuration files (SPEC §5).

Reads ``<agent-dir>/bytefly.json`` and, for a trusted project only,
``<project-root>/.pi/bytefly.json``, and lets ``memory_ls.core.config`` merge
them. A file that cannot be read is reported, never raised.
"""

from __future__ import annotations

from pathlib import Path

from memory_ls.core.config import (
    ConfigLayer,
    EffectiveConfig,
    resolve_config,
    skipped_layer,
    unreadable_layer,
)
from memory_ls.store.paths import (
    global_store_path,
    hard_linked_store_message,
    project_folder_refusal,
    read_small_text,
    shared_file_refusal,
)

CONFIG_FILE_NAME = "bytefly.json"

CONFIG_SIZE_LIMIT = 1024 * 1024
"""A configuration file larger than this is ignored (and reported)."""


def global_config_path(agent_dir: Path) -> Path:
    """Return ``<agent-dir>/bytefly.json``."""
    return agent_dir / CONFIG_FILE_NAME


def project_config_path(project_root: Path) -> Path:
    """Return ``<project-root>/.pi/bytefly.json``."""
    return project_root / ".pi" / CONFIG_FILE_NAME


def load_config(agent_dir: Path, project_root: Path, trusted: bool) -> EffectiveConfig:
    """Return the effective configuration for a project.

    The project layer of an untrusted project is not read at all (it is
    repository-controlled), and is recorded as ``skipped-untrusted``. Nor is it
    read through a ``.pi`` that resolves outside the project: that file is
    another folder's, and is recorded as ``ignored`` with the refusal (SPEC §1). When the
    agent dir is the project's ``.pi`` (the project scope is refused: SPEC §1), its
    ``bytefly.json`` is the agent dir's, read and listed once, as the global layer. When
    only the project's ``memory.md`` is the global one (a hard link), its folder is the
    project's own, and so is its ``bytefly.json``.
    """
    layers: list[ConfigLayer] = [_read_layer(global_config_path(agent_dir))]
    project_path = project_config_path(project_root)
    global_store = global_store_path(agent_dir)
    refusal = project_folder_refusal(project_root, global_store=global_store)
    if refusal == hard_linked_store_message(project_root, global_store):
        # Only its memory.md is the global file: the folder and its bytefly.json are the
        # project's own (the project scope is refused for its notes alone).
        refusal = None
    if shared_file_refusal(project_root, global_store, refusal) is not None:
        pass  # the agent dir is this `.pi`: its file is the layer above, read and listed once
    elif refusal is not None:
        layers.append(unreadable_layer(str(project_path), refusal))
    elif trusted:
        layers.append(_read_layer(project_path))
    else:
        layers.append(skipped_layer(str(project_path)))
    return resolve_config(layers)


def _read_layer(path: Path) -> ConfigLayer:
    read = read_small_text(path, CONFIG_SIZE_LIMIT)
    if read.error is not None:
        return unreadable_layer(str(path), read.error)
    return (str(path), read.text)
