"""Publishing joins pre-encoded diagnostics: the bytes must be what pygls would write.

A publish is built from JSON encoded once per line (``Analysis.encoded``) and
framed by ``protocol.send_encoded``; these tests hold it to pygls' own
serialisation of the same diagnostics as lsprotocol objects, and check that a
pull client is told ``unchanged`` when nothing changed.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

from memory_ls.core import checks
from memory_ls.server import diagnostics, publishing
from memory_ls.server.documents import Span
from tests.server.conftest import InProcess

CONVERTER = get_converter()

NOTES = [
    "run pytest before every push",
    "Run pytest before every push!",  # duplicate
    "run pytest before every pushes",  # similar
    "naïve “quotes” and an emoji 😀 in the note",
    "zero\u200bwidth",
    "shared with the global store",  # cross-scope
]


class Capture:
    """A pygls writer that keeps the raw bytes it is given."""

    def __init__(self) -> None:
        self.data: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.data.append(data)

    def close(self) -> None:
        return None


def framed(data: bytes) -> Any:
    """The JSON body of one framed message, after checking its ``Content-Length``."""
    header, _, body = data.partition(b"\r\n\r\n")
    fields = dict(line.split(": ", 1) for line in header.decode("ascii").split("\r\n"))
    assert int(fields["Content-Length"]) == len(body)
    assert body.isascii()
    return json.loads(body)


async def test_a_publish_is_what_pygls_would_write_for_the_same_diagnostics(
    server: InProcess,
) -> None:
    server.workspace.write("project", NOTES)
    server.workspace.write("global", ["Shared with the global store."])
    await server.initialize()
    uri = server.open(server.workspace.project_store)
    found = server.ls.document(uri)
    assert found is not None
    doc, state = found
    state.set_similar(server.ls.analysis.all_pairs(server.ls.analysis.similar_snapshot(doc), 85))
    state.similar_ready = True

    capture = Capture()
    server.ls.protocol.set_writer(capture, include_headers=True)
    publishing.publish(server.ls, doc, always=True)
    ours = framed(capture.data[-1])
    diagnostics = ours["params"]["diagnostics"]
    codes = {d["code"] for d in diagnostics}
    assert {"duplicate", "similar", "cross-scope-duplicate", "hidden-unicode"} <= codes

    # The same diagnostics as lsprotocol objects, sent the way pygls sends anything.
    objects = [CONVERTER.structure(d, lsp.Diagnostic) for d in diagnostics]
    server.ls.protocol._send_data(
        lsp.PublishDiagnosticsNotification(
            params=lsp.PublishDiagnosticsParams(uri=uri, version=doc.version, diagnostics=objects)
        )
    )
    theirs = framed(capture.data[-1])
    assert ours == theirs


async def test_a_pull_client_hears_unchanged_until_something_changes(server: InProcess) -> None:
    server.workspace.write("project", NOTES)
    await server.initialize()
    uri = server.open(server.workspace.project_store)
    found = server.ls.document(uri)
    assert found is not None
    doc = found.doc

    def pull(previous: str | None) -> Any:
        params = lsp.DocumentDiagnosticParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), previous_result_id=previous
        )
        return publishing.pull_diagnostics(server.ls, params)

    first = pull(None)
    assert first["kind"] == "full" and first["items"]
    again = pull(first["resultId"])
    assert again == {"kind": "unchanged", "resultId": first["resultId"]}
    # An edit that changes nothing the diagnostics show: still unchanged.
    line = len(doc.lines) - 1
    doc.apply_change(Span(line, 0, line, 0), "", "utf-16")
    assert pull(first["resultId"])["kind"] == "unchanged"
    # One that does: a full report with a new id.
    line = doc.lines.index("- zero\u200bwidth")
    doc.apply_change(Span(line, 6, line, 7), "", "utf-16")
    changed = pull(first["resultId"])
    assert changed["kind"] == "full" and changed["resultId"] != first["resultId"]
    assert not any(d["code"] == "hidden-unicode" for d in changed["items"])
    assert pull(None)["kind"] == "full"  # a client that lost its id gets the full report


async def test_a_pull_client_sees_moved_lines_spliced_and_unchanged_after_a_round_trip(
    server: InProcess,
) -> None:
    """Lines added above the pairs: a full report whose every line number moved (the
    "on line N" of the messages too, 8 → 10), equal to a fresh open of the same text; a
    line added then removed before the next pull: ``unchanged``, the same result id."""
    fillers = ["apples", "the build uses bazel", "zebra crossing", "quartz", "kettle 42"]
    server.workspace.write("project", fillers + NOTES)
    await server.initialize(capabilities="visual-studio-code")
    uri = server.open(server.workspace.project_store)
    found = server.ls.document(uri)
    assert found is not None
    doc = found.doc

    def pull(previous: str | None) -> Any:
        params = lsp.DocumentDiagnosticParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), previous_result_id=previous
        )
        return publishing.pull_diagnostics(server.ls, params)

    first = pull(None)
    messages = [d["message"] for d in first["items"] if d["code"] == "duplicate"]
    assert messages and all("on line 8:" in m for m in messages)
    doc.apply_change(Span(0, 0, 0, 0), "\n\n", "utf-16")
    moved = pull(first["resultId"])
    assert moved["kind"] == "full" and moved["resultId"] != first["resultId"]
    assert [d["message"] for d in moved["items"] if d["code"] == "duplicate"] == [
        m.replace("on line 8:", "on line 10:") for m in messages
    ]
    by_line = {d["range"]["start"]["line"] - 2: d for d in moved["items"]}
    assert sorted(by_line) == sorted(d["range"]["start"]["line"] for d in first["items"])
    doc.set_text(doc.text())  # the same text read afresh: nothing cached, the same report
    assert pull(moved["resultId"]) == {"kind": "unchanged", "resultId": moved["resultId"]}
    doc.apply_change(Span(3, 0, 3, 0), "- a new line\n", "utf-16")
    doc.apply_change(Span(3, 0, 4, 0), "", "utf-16")
    assert pull(moved["resultId"]) == {"kind": "unchanged", "resultId": moved["resultId"]}


# -- the first publish of an opened store -------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.sampled_from('a "\\\n\x00é😀\u2028\ud800')),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.sampled_from('ab"é'), max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_a_diagnostic_is_encoded_as_json_dumps_encodes_it(value: Any) -> None:
    # The encoder made once for every template's data: pygls writes json.dumps' text.
    assert diagnostics._encode(value) == json.dumps(value)


@given(st.text())
def test_a_diagnostic_string_is_encoded_as_json_dumps_encodes_it(value: str) -> None:
    assert diagnostics._string(value) == json.dumps(value)


async def test_the_collector_waits_for_the_first_publish_of_an_opened_store(
    server: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.workspace.write("project", NOTES)
    server.workspace.write("global", ["Shared with the global store."])
    await server.initialize()
    seen: list[bool] = []
    publish = publishing.publish

    def spy(*args: Any, **kwargs: Any) -> None:
        seen.append(gc.isenabled())
        publish(*args, **kwargs)

    monkeypatch.setattr(publishing, "publish", spy)
    assert gc.isenabled()
    server.open(server.workspace.project_store)
    assert seen[:1] == [False]  # the first publish: no collection before it is written
    assert gc.isenabled()  # and on again once it is

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a publish that fails")

    monkeypatch.setattr(publishing, "publish", broken)
    server.open(server.workspace.global_store)
    monkeypatch.setattr(publishing, "publish", publish)  # (the background's publishes)
    assert gc.isenabled()  # on again when the publish failed too
    assert any("a publish that fails" in line for line in server.client.logs())


def test_without_the_c_encoder_a_diagnostic_is_encoded_by_json_dumps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    item = {"message": "on line 3: “x” 😀", "range": {"start": {"line": 2}}, "data": [1.5, None]}
    monkeypatch.setattr(diagnostics, "_ENCODE", None)
    assert diagnostics._encode(item) == json.dumps(item)


async def test_what_the_first_publish_needs_is_loaded_when_the_client_is_initialized(
    server: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # BLAKE2b is looked up (and its module loaded) before any document is opened.
    monkeypatch.setattr(checks, "_blake2b", None)
    await server.initialize()
    assert checks._blake2b is not None
