"""Trust (SPEC §4): explicit, then trust.json, then trust-requiring resources."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory_ls.core.records import asdict
from memory_ls.core.trust import (
    PROJECT_TRUST_RESOURCES,
    nearest_trust_entry,
    parse_trust_store,
    resources_decision,
    trust_entries,
)
from memory_ls.store.trust import decide_trust


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def agent_dir(home: Path) -> Path:
    folder = home / ".pi" / "agent"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def project(home: Path) -> Path:
    folder = home / "code" / "project"
    folder.mkdir(parents=True)
    return folder.resolve()


def write_trust(agent_dir: Path, data: object) -> None:
    (agent_dir / "trust.json").write_text(json.dumps(data))


# -- rule 1: explicit --------------------------------------------------------------


@pytest.mark.parametrize("explicit", [True, False])
def test_explicit_decides_first(project: Path, agent_dir: Path, home: Path, explicit: bool) -> None:
    write_trust(agent_dir, {str(project): not explicit})
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").write_text("{}")
    decision = decide_trust(project, agent_dir, explicit=explicit, home=home)
    assert decision.trusted is explicit
    assert decision.rule == "explicit"
    assert decision.reason.startswith("trusted" if explicit else "untrusted")


# -- rule 2: trust.json ------------------------------------------------------------


def test_trust_json_exact_root(project: Path, agent_dir: Path, home: Path) -> None:
    write_trust(agent_dir, {str(project): False})
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (False, "trust.json")
    assert decision.reason == (
        f"untrusted: {agent_dir / 'trust.json'} marks {project} as untrusted"
    )
    assert decision.problems == []


def test_trust_json_beats_resources(project: Path, agent_dir: Path, home: Path) -> None:
    (project / ".pi" / "extensions").mkdir(parents=True)
    write_trust(agent_dir, {str(project): True})
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (True, "trust.json")


def test_trust_json_nearest_ancestor(project: Path, agent_dir: Path, home: Path) -> None:
    write_trust(agent_dir, {str(home): False, str(project.parent): True})
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (True, "trust.json")
    assert f"{project.parent} (an ancestor of the project)" in decision.reason


def test_trust_json_null_means_keep_walking(project: Path, agent_dir: Path, home: Path) -> None:
    write_trust(agent_dir, {str(project): None, str(project.parent): False})
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (False, "trust.json")


def test_trust_json_only_nulls_falls_through(project: Path, agent_dir: Path, home: Path) -> None:
    write_trust(agent_dir, {str(project): None})
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (True, "resources")


def test_trust_json_is_looked_up_with_the_canonical_root(
    project: Path, agent_dir: Path, home: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)
    write_trust(agent_dir, {str(project): False})
    decision = decide_trust(link, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (False, "trust.json")


def test_trust_json_sibling_does_not_match(project: Path, agent_dir: Path, home: Path) -> None:
    write_trust(agent_dir, {str(project) + "-other": False, str(project) + "/child": False})
    decision = decide_trust(project, agent_dir, home=home)
    assert decision.rule == "resources"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "malformed JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "expected a JSON object, found an array"),
        ('"/x"', "expected a JSON object, found a string"),
        ('{"/x": NaN}', "malformed JSON"),
    ],
)
def test_malformed_trust_json_is_no_decision_and_reported(
    project: Path, agent_dir: Path, home: Path, content: str, problem: str
) -> None:
    (agent_dir / "trust.json").write_text(content)
    (project / ".pi").mkdir()
    (project / ".pi" / "mcp.json").write_text("{}")
    decision = decide_trust(project, agent_dir, home=home)
    # Rule 3 decides, and the trust.json problem is still reported.
    assert (decision.trusted, decision.rule) == (False, "resources")
    assert len(decision.problems) == 1
    assert decision.problems[0].startswith(f"ignored {agent_dir / 'trust.json'}: ")
    assert problem in decision.problems[0]


def test_unreadable_trust_json_is_reported(project: Path, agent_dir: Path, home: Path) -> None:
    (agent_dir / "trust.json").mkdir()
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (True, "resources")
    assert decision.problems == [f"ignored {agent_dir / 'trust.json'}: is a directory"]


def test_missing_trust_json_is_not_a_problem(project: Path, agent_dir: Path, home: Path) -> None:
    decision = decide_trust(project, agent_dir, home=home)
    assert decision.problems == []


def test_bad_entries_are_skipped_and_reported(project: Path, agent_dir: Path, home: Path) -> None:
    write_trust(agent_dir, {str(project): "yes", str(project.parent): False, "relative": True})
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (False, "trust.json")
    assert len(decision.problems) == 2
    assert "expected true, false or null, found a string" in decision.problems[0]
    assert "not an absolute path" in decision.problems[1]


def test_trust_entries_normalise_keys_and_false_wins() -> None:
    entries, problems = trust_entries({"/a/b/": True, "/a/b": False, "/c": 1}, "t.json")
    assert entries == {"/a/b": False}
    assert problems == [
        "ignored entry '/c' in t.json: expected true, false or null, found a number"
    ]
    assert nearest_trust_entry(entries, "/a/b/c/d") is not None
    assert nearest_trust_entry({"/": True}, "/x/y") is not None
    assert nearest_trust_entry({"/a": None}, "/a") is None


def test_parse_trust_store_accepts_a_bom() -> None:
    entries, problems = parse_trust_store('\ufeff{"/a": true}', "t.json")
    assert (entries, problems) == ({"/a": True}, [])


# -- rule 3: trust-requiring resources -----------------------------------------------


def test_no_resources_is_trusted(project: Path, agent_dir: Path, home: Path) -> None:
    (project / ".pi").mkdir()
    (project / ".pi" / "memory.md").write_text("- a note\n")
    (project / ".pi" / "bytefly.json").write_text("{}")
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (True, "resources")
    assert decision.reason == "trusted: no trust-requiring resources in the project"


@pytest.mark.parametrize("resource", PROJECT_TRUST_RESOURCES)
@pytest.mark.parametrize("as_dir", [False, True])
def test_each_resource_makes_it_untrusted(
    project: Path, agent_dir: Path, home: Path, resource: str, as_dir: bool
) -> None:
    path = project / resource
    path.parent.mkdir(parents=True, exist_ok=True)
    if as_dir:
        path.mkdir()
    else:
        path.write_text("{}")
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (False, "resources")
    assert decision.reason == f"untrusted: the project holds {resource}"


def test_dangling_symlink_resource_counts(project: Path, agent_dir: Path, home: Path) -> None:
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").symlink_to(project / "nowhere")
    assert decide_trust(project, agent_dir, home=home).trusted is False


def test_agents_skills_in_root(project: Path, agent_dir: Path, home: Path) -> None:
    (project / ".agents" / "skills").mkdir(parents=True)
    decision = decide_trust(project, agent_dir, home=home)
    assert decision.trusted is False
    assert decision.reason == "untrusted: the project holds .agents/skills"


def test_agents_skills_in_ancestor(project: Path, agent_dir: Path, home: Path) -> None:
    skills = project.parent / ".agents" / "skills"
    skills.mkdir(parents=True)
    decision = decide_trust(project, agent_dir, home=home)
    assert decision.trusted is False
    assert decision.reason == f"untrusted: a parent folder holds {skills}"


def test_home_agents_skills_is_excluded(project: Path, agent_dir: Path, home: Path) -> None:
    (home / ".agents" / "skills").mkdir(parents=True)
    decision = decide_trust(project, agent_dir, home=home)
    assert (decision.trusted, decision.rule) == (True, "resources")


def test_home_agents_skills_excluded_via_symlinked_home(
    project: Path, agent_dir: Path, home: Path, tmp_path: Path
) -> None:
    (home / ".agents" / "skills").mkdir(parents=True)
    home_link = tmp_path / "home-link"
    home_link.symlink_to(home)
    assert decide_trust(project, agent_dir, home=home_link).trusted is True


def test_project_that_is_home_excludes_its_agents_skills(agent_dir: Path, home: Path) -> None:
    (home / ".agents" / "skills").mkdir(parents=True)
    assert decide_trust(home, agent_dir, home=home).trusted is True


def test_several_resources_are_all_named(project: Path, agent_dir: Path, home: Path) -> None:
    (project / ".pi" / "skills").mkdir(parents=True)
    (project / ".pi" / "SYSTEM.md").write_text("x")
    skills = project.parent / ".agents" / "skills"
    skills.mkdir(parents=True)
    decision = decide_trust(project, agent_dir, home=home)
    assert decision.reason == (
        f"untrusted: the project holds .pi/skills, .pi/SYSTEM.md; a parent folder holds {skills}"
    )


def test_unverifiable_resource_counts_as_present(
    project: Path, agent_dir: Path, home: Path
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can stat anything")
    pi = project / ".pi"
    pi.mkdir()
    pi.chmod(0)
    try:
        decision = decide_trust(project, agent_dir, home=home)
    finally:
        pi.chmod(0o755)
    assert decision.trusted is False
    assert decision.problems


def test_resources_decision_is_pure() -> None:
    assert resources_decision([]).trusted is True
    decision = resources_decision([".pi/mcp.json"])
    assert asdict(decision) == {
        "trusted": False,
        "rule": "resources",
        "reason": "untrusted: the project holds .pi/mcp.json",
        "problems": [],
        "consulted": (),
    }


def test_a_huge_number_spoils_only_its_own_entry() -> None:
    # An integer of 5000 digits was "malformed JSON" (Python's int limit): the whole file lost.
    text = f'{{"/a": true, "/b": {"1" * 5000}, "/c": 1e999}}'
    entries, problems = parse_trust_store(text, "/agent/trust.json")
    assert entries == {"/a": True}
    assert problems == [
        "ignored entry '/b' in /agent/trust.json: expected true, false or null, found a number",
        "ignored entry '/c' in /agent/trust.json: expected true, false or null, found a number",
    ]
