"""Every refusal gets its exact message and leaves the store byte-identical (SPEC §1-§3)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memory_ls.core.models import Scope
from memory_ls.store.files import read_store
from tests.conftest import Workspace

MUTATIONS: list[tuple[str, dict[str, object]]] = [
    ("add", {"text": "new note"}),
    ("update", {"text": "a", "to": "b"}),
    ("forget", {"text": "a"}),
    ("merge", {"text": "a", "other": "z", "to": "c"}),
    ("move", {"text": "a"}),
    ("clear", {}),
]


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry of ``folder`` with its bytes (or its link target)."""
    out: dict[str, bytes | str] = {}
    for name in sorted(os.listdir(folder)):
        path = folder / name
        if path.is_symlink():
            out[name] = "-> " + os.readlink(path)
        elif path.is_file():
            out[name] = path.read_bytes()
    return out


def run_all(ws: Workspace, scope: Scope, expect: str) -> None:
    rt = ws.runtime()
    folder = ws.store(scope).parent
    before = snapshot(folder)
    for action, args in MUTATIONS:
        result = rt.run(action, {**args, "scope": scope})
        assert result.get("error") == expect, action
        assert result["changed"] is False, action
        assert snapshot(folder) == before, action


# -- symlinks -------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["project", "global"])
def test_symlinked_store_is_refused(workspace: Workspace, scope: Scope) -> None:
    target = workspace.root / "real.md"
    target.write_text("- a\n- z\n")
    path = workspace.store(scope)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    message = f"Refusing to use the symlinked memory file: {path}"
    run_all(workspace, scope, message)
    assert target.read_bytes() == b"- a\n- z\n"
    listed = workspace.runtime().run("list", {})
    assert listed["error"] == message
    assert listed[scope] == []
    assert workspace.runtime().plan().body is None


@pytest.mark.parametrize("scope", ["project", "global"])
def test_dangling_symlink_is_refused(workspace: Workspace, scope: Scope) -> None:
    path = workspace.store(scope)
    path.parent.mkdir(parents=True, exist_ok=True)
    missing = workspace.root / "missing.md"
    path.symlink_to(missing)
    message = f"Refusing to use the symlinked memory file: {path}"
    run_all(workspace, scope, message)
    assert not missing.exists()
    assert path.is_symlink()
    assert read_store(path).error == message


# -- size -----------------------------------------------------------------------


def filled(size: int) -> bytes:
    head = b"- a\n- z\n"
    return head + b"x" * (size - len(head) - 1) + b"\n"


def test_oversize_store_is_refused(workspace: Workspace) -> None:
    path = workspace.write("project", filled(262_145))
    message = f"Memory file is 262145 bytes, larger than the 262144-byte limit: {path}"
    run_all(workspace, "project", message)
    listed = workspace.runtime().run("list", {})
    assert listed["error"] == message
    assert listed["project"] == []


def test_store_of_exactly_the_cap_is_read(workspace: Workspace) -> None:
    path = workspace.write("project", filled(262_144))
    assert path.stat().st_size == 262_144
    rt = workspace.runtime()
    listed = rt.run("list", {})
    assert "error" not in listed
    assert listed["project"] == ["a", "z"]
    # removing a note shrinks it: allowed
    assert rt.run("forget", {"text": "a"})["changed"] is True
    assert path.stat().st_size == 262_144 - 4


def test_mutation_over_the_cap_is_refused_naming_the_would_be_size(
    workspace: Workspace,
) -> None:
    path = workspace.write("project", filled(262_144 - 5))
    before = path.read_bytes()
    result = workspace.runtime().run("add", {"text": "abcd"})  # "- abcd\n" is 7 bytes
    assert result["error"] == (
        f"Memory file is 262146 bytes, larger than the 262144-byte limit: {path}"
    )
    assert result["changed"] is False
    assert result["project"] == ["a", "z"]
    assert path.read_bytes() == before
    assert sorted(os.listdir(path.parent)) == ["memory.md"]
    # exactly up to the cap is fine
    ok = workspace.runtime().run("add", {"text": "ab"})  # "- ab\n": 5 bytes
    assert ok["changed"] is True
    assert path.stat().st_size == 262_144


def test_update_over_the_cap_is_refused(workspace: Workspace) -> None:
    path = workspace.write("global", filled(262_144))
    result = workspace.runtime().run("update", {"text": "a", "to": "ab", "scope": "global"})
    assert result["error"] == (
        f"Memory file is 262145 bytes, larger than the 262144-byte limit: {path}"
    )
    assert path.read_bytes() == filled(262_144)


# -- invalid UTF-8 --------------------------------------------------------------


def test_invalid_utf8_is_readable_but_never_rewritten(workspace: Workspace) -> None:
    data = b"- a\n- z\n- caf\xe9\n"
    path = workspace.write("project", data)
    message = f"Memory file is not valid UTF-8 (first bad byte at offset 13): {path}"
    run_all(workspace, "project", message)
    listed = workspace.runtime().run("list", {})
    assert listed["project"] == ["a", "z", "caf\ufffd"]
    assert path.read_bytes() == data


def test_invalid_utf8_offset_counts_from_file_start_including_bom(workspace: Workspace) -> None:
    path = workspace.write("global", b"\xef\xbb\xbf- a\n\xff")
    result = workspace.runtime().run("add", {"text": "b", "scope": "global"})
    assert result["error"] == (
        f"Memory file is not valid UTF-8 (first bad byte at offset 7): {path}"
    )


# -- untrusted, blank, over-long, no match ---------------------------------------


def test_untrusted_project_refusals_leave_the_file(workspace: Workspace) -> None:
    workspace.write("project", "- a\n- z\n")
    rt = workspace.runtime(trusted=False)
    before = snapshot(workspace.root / ".pi")
    for action, args in MUTATIONS:
        result = rt.run(action, args)
        assert result["error"] == (
            'Project memory is unavailable for an untrusted project; use scope "global".'
        )
        assert result["project"] == []
    assert snapshot(workspace.root / ".pi") == before


@pytest.mark.parametrize(
    ("action", "args", "error"),
    [
        ("add", {"text": ""}, "text is required."),
        ("add", {"text": "\u00a0\u2028"}, "text is required."),
        ("add", {"text": {"x": 1}}, "text is required."),
        ("add", {"text": "x" * 501}, "text is longer than 500 characters."),
        ("forget", {"text": "  "}, "text is required."),
        ("forget", {"text": "x"}, "No project memory note matches: x"),
        ("forget", {"text": "A"}, "No project memory note matches: A"),
        ("update", {"text": "a", "to": ""}, "to is required."),
        ("update", {"text": "a", "to": "😀" * 251}, "to is longer than 500 characters."),
        ("update", {"text": "x", "to": "y"}, "No project memory note matches: x"),
        ("merge", {"text": "a", "to": "y"}, "other is required."),
        (
            "merge",
            {"text": "a", "other": "a", "to": "y"},
            "text and other must be different notes.",
        ),
        ("merge", {"text": "x", "other": "a", "to": "y"}, "No project memory note matches: x"),
        ("move", {"text": "x"}, "No project memory note matches: x"),
        ("add", {"text": "a", "scope": "local"}, "scope must be one of project, global."),
        ("clear", {"scope": None, "x": 1}, None),
    ],
)
def test_field_refusals_are_exact_and_harmless(
    workspace: Workspace, action: str, args: dict[str, object], error: str | None
) -> None:
    workspace.write("project", "- a\n- z\n")
    workspace.write("global", "- g\n")
    before = (workspace.read("project"), workspace.read("global"))
    rt = workspace.runtime()
    result = rt.run(action, args)
    if error is None:  # clear is the control case: it does change the file
        assert result["changed"] is True
        return
    assert result["error"] == error
    assert result["changed"] is False
    assert result["project"] == ["a", "z"]
    assert result["global"] == ["g"]
    assert (workspace.read("project"), workspace.read("global")) == before


def test_move_into_a_symlinked_store_leaves_the_source(workspace: Workspace) -> None:
    workspace.write("project", "- p\n")
    target = workspace.root / "real.md"
    workspace.agent_dir.mkdir(exist_ok=True)
    workspace.global_store.symlink_to(target)
    result = workspace.runtime().run("move", {"text": "p"})
    assert result["error"] == (
        f"Refusing to use the symlinked memory file: {workspace.global_store}"
    )
    assert result["changed"] is False
    assert workspace.read("project") == b"- p\n"
    assert not target.exists()


def test_pi_that_is_a_file_gives_an_error_result_not_an_exception(
    workspace: Workspace,
) -> None:
    (workspace.root / ".pi").write_text("not a folder")
    result = workspace.runtime().run("add", {"text": "x"})
    assert result["error"] == (
        f"Cannot write the memory file {workspace.project_store}: "
        f"{workspace.root / '.pi'} is not a directory"
    )
    assert result["changed"] is False
    assert (workspace.root / ".pi").read_text() == "not a folder"


def test_an_agent_dir_that_is_a_file_is_named_when_a_write_or_a_proposal_fails(
    workspace: Workspace,
) -> None:
    """Creating the folder fails with "File exists", which names no culprit: the message
    names the file standing where the agent dir should be (both write paths)."""
    from memory_ls.store.review import Review

    workspace.agent_dir.rmdir()
    workspace.agent_dir.write_text("not a folder")
    expected = (
        f"Cannot write the memory file {workspace.global_store}: "
        f"{workspace.agent_dir} is not a directory"
    )
    runtime = workspace.runtime()
    assert runtime.run("add", {"text": "x", "scope": "global"})["error"] == expected
    proposed, _ = Review(runtime).propose("add", {"text": "x", "scope": "global"}, "test")
    inbox = workspace.agent_dir / "memory.inbox.jsonl"
    assert proposed["error"] == (
        f"Cannot write the memory file {inbox}: {workspace.agent_dir} is not a directory"
    )
    assert workspace.agent_dir.read_text() == "not a folder"


def test_failed_rename_is_an_error_and_leaves_no_temporary(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = workspace.write("project", "- a\n")

    def broken(src: object, dst: object, **dir_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    result = workspace.runtime().run("add", {"text": "b"})
    assert result["error"] == f"Cannot write the memory file {path}: No space left on device"
    assert result["changed"] is False
    assert result["project"] == ["a"]
    assert path.read_bytes() == b"- a\n"
    assert sorted(os.listdir(path.parent)) == ["memory.md"]


def test_a_failed_write_during_a_move_names_the_store_that_failed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.write("project", "- p\n")
    workspace.write("global", "- g\n")

    def broken(src: object, dst: object, **dir_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    result = workspace.runtime().run("move", {"text": "p"})
    assert result["error"] == (
        f"Cannot write the memory file {workspace.global_store}: No space left on device"
    )
    assert workspace.read("project") == b"- p\n" and workspace.read("global") == b"- g\n"


def test_a_dangling_agent_dir_link_is_named_when_a_write_fails(workspace: Workspace) -> None:
    workspace.agent_dir.rmdir()
    workspace.agent_dir.symlink_to(workspace.root / "nowhere")
    result = workspace.runtime().run("add", {"text": "x", "scope": "global"})
    assert result["error"] == (
        f"Cannot write the memory file {workspace.global_store}: "
        f"{workspace.agent_dir} is a symlink to nothing (a dangling link)"
    )
    assert not (workspace.root / "nowhere").exists()


def test_a_dangling_project_folder_link_is_named_when_a_write_fails(workspace: Workspace) -> None:
    """The project store's folder is not created (only the global one is): a `.pi` that
    leads nowhere failed with the bare 'No such file or directory', naming no culprit."""
    pi = workspace.project_store.parent
    if pi.exists():
        shutil.rmtree(pi)
    pi.symlink_to(workspace.root / "nowhere")
    result = workspace.runtime().run("add", {"text": "x"})
    assert result["error"] == (
        f"Cannot write the memory file {workspace.project_store}: "
        f"{pi} is a symlink to nothing (a dangling link)"
    )
    assert not (workspace.root / "nowhere").exists()


def test_an_agent_dir_link_loop_is_named_as_a_loop_when_a_write_fails(
    workspace: Workspace,
) -> None:
    """Not 'a symlink to nothing': it leads somewhere, round and round."""
    workspace.agent_dir.rmdir()
    other = workspace.root / "other"
    other.symlink_to(workspace.agent_dir)
    workspace.agent_dir.symlink_to(other)
    result = workspace.runtime().run("add", {"text": "x", "scope": "global"})
    assert result["error"] == (
        f"Cannot write the memory file {workspace.global_store}: "
        f"{workspace.agent_dir} is a symlink that leads back to itself"
    )
