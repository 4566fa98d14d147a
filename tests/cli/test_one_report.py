"""``check`` and the doctor report the same problems the same way (SPEC §9; issue 9 item 11)."""

from __future__ import annotations

import json

from tests.conftest import Workspace
from tests.one_report_file import BAD_BYTE, CONTENT, DUPLICATE, check_rows


def test_check_and_doctor_agree_on_the_bad_byte_and_the_duplicate(workspace: Workspace) -> None:
    store = workspace.write("project", CONTENT)
    for args in (["check"], ["check", str(store)]):
        rows = check_rows(workspace.cli(*args).stdout)
        assert rows["invalid-utf8"][:2] == BAD_BYTE, args
        line, _, message = rows["duplicate"]
        assert (line, message) == DUPLICATE, args
    doctor = workspace.cli("doctor")
    line, message = DUPLICATE
    assert f"line {line}: {message}" in doctor.stdout
    report = json.loads(workspace.cli("doctor", "--json").stdout)
    pair = report["project"]["duplicates"][0]
    assert (pair["firstLine"], pair["secondLine"], pair["first"]) == (3, 5, "use pnpm, not npm")
