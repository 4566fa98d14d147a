"""Cancelling commands over a real ``memory-ls serve``: every request answered once.

Raw JSON-RPC (tests/e2e/test_bad_requests.py's client): cancels of unknown and
answered ids, floods of them, ``shutdown`` with commands in flight, and command
requests whose arguments are not what a command takes.
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_ls.core.text import HEADER
from tests.e2e.test_bad_requests import RawClient, internal_errors

ADD = "workspace/executeCommand"


@pytest.fixture(name="client")
def raw_client(tmp_path: Path) -> Iterator[RawClient]:
    """test_bad_requests' client on its project (a store of two notes)."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".pi").mkdir()
    (root / ".pi" / "memory.md").write_text(HEADER + "\n\n- use pnpm\n- run make test\n")
    for name in ("agent", "home"):
        (tmp_path / name).mkdir()
    raw = RawClient(root, tmp_path / "agent", tmp_path / "home", tmp_path / "server.log")
    yield raw
    raw.close()


def send_add(client: RawClient, text: str) -> int:
    msg_id = client.new_id()
    client.send(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": ADD,
            "params": {"command": "memory.add", "arguments": [{"text": text}]},
        }
    )
    return msg_id


def answers(client: RawClient, msg_id: Any, wait: float = 0.5) -> list[dict[str, Any]]:
    """Every answer to ``msg_id`` that came within ``wait`` seconds of the first."""
    got: list[dict[str, Any]] = [client.response(msg_id, timeout=10)]
    q = client._queue(msg_id)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            got.append(q.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            break
    return got


def wait_held(client: RawClient, method: str, count: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while len(client.held[method]) < count:
        assert time.monotonic() < deadline, f"the server never sent {method}"
        time.sleep(0.02)
    return client.held[method]


def open_store(client: RawClient) -> str:
    return client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )


def initialized_with_store(client: RawClient) -> tuple[Path, str]:
    """``initialize``, then the project store opened and its first diagnostics in:
    (the store's path, its uri)."""
    client.initialize()
    uri = open_store(client)
    client.wait_published(uri, 1)
    return client.root / ".pi" / "memory.md", uri


def test_shutdown_while_a_written_add_waits_for_its_buffer_edit_answers_what_it_wrote(
    client: RawClient,
) -> None:
    # The add wrote its note and waits for the client's answer to its buffer edit when
    # shutdown comes: shutdown cancels the server's own request, and the command, which
    # cannot take the write back, must answer with what it wrote (docs/lsp.md:
    # "shutdown cancels commands in flight the same way"), not "canceled".
    client.held["workspace/applyEdit"] = []
    client.initialize()
    open_store(client)
    msg_id = send_add(client, "new note")
    wait_held(client, "workspace/applyEdit")
    assert "result" in client.request("shutdown", timeout=5)
    got = answers(client, msg_id)
    assert len(got) == 1, got
    assert "result" in got[0], got[0]
    assert "new note" in got[0]["result"]["project"], got[0]
    client.notify("exit")
    assert client.proc.wait(timeout=10) == 0
    assert "new note" in (client.root / ".pi" / "memory.md").read_text()


def test_cancel_floods_unknown_and_answered_ids_answer_each_request_once(
    client: RawClient,
) -> None:
    client.initialize()
    uri = open_store(client)
    client.wait_published(uri, 1)
    done = send_add(client, "first note")
    assert len(answers(client, done)) == 1
    ids = [send_add(client, f"note {n}") for n in range(5)]
    for _ in range(20):
        for msg_id in [*ids, done, 99999, "x", None, 1.5]:
            client.notify("$/cancelRequest", {"id": msg_id})
    for msg_id in ids:
        got = answers(client, msg_id, wait=0.2)
        assert len(got) == 1, got
        if "result" in got[0]:  # what an answer says was written is in the file
            assert all(n in got[0]["result"]["project"] for n in ("first note",)), got
    listed = client.request(ADD, {"command": "memory.list", "arguments": [{}]})
    text = (client.root / ".pi" / "memory.md").read_text()
    for n in range(5):
        assert (f"note {n}" in listed["result"]["project"]) == (f"- note {n}\n" in text)
    assert client.proc.poll() is None


def test_command_arguments_that_are_no_list_get_an_error(client: RawClient) -> None:
    client.initialize()
    for params in (
        {"command": "memory.list", "arguments": {"scope": "project"}},
        {"command": "memory.list", "arguments": "project"},
        {"command": "memory.list", "arguments": 5},
        {"command": "memory.nope", "arguments": []},
        {"command": None},
        {"command": "memory.add", "arguments": [{"text": "x" * 200_000}]},
        {"command": "memory.add", "arguments": [[1, 2]]},
        {"command": "memory.add", "arguments": [None]},
        {"command": "memory.add", "arguments": [{}] * 10_000},
    ):
        answer = client.request(ADD, params, timeout=10)
        assert "error" in answer or "result" in answer, (params, answer)
        if "error" in answer:
            assert answer["error"]["code"] != -32603, (params, answer)
    listed = client.request(ADD, {"command": "memory.list", "arguments": None})
    assert "result" in listed, listed
    assert client.proc.poll() is None


def test_shutdown_with_an_add_waiting_for_the_lock_and_one_for_its_turn(
    client: RawClient,
) -> None:
    # The first add waits for another process's lock (begun: its thread cannot be
    # stopped), the second for the store's turn behind it (not begun). Shutdown answers
    # the second "canceled" and it writes nothing; shutdown itself is answered only once
    # the first has answered with its note: a client exits at shutdown's answer, and an
    # exit then left the first's write done and unanswered (its answer hit a closed pipe).
    from tests.lock_holder import held_lock, release

    store, _ = initialized_with_store(client)
    with held_lock(store, dict(os.environ)) as holder:
        first = send_add(client, "first note")
        time.sleep(0.3)
        second = send_add(client, "second note")
        time.sleep(0.2)
        shutdown = client.new_id()
        client.send({"jsonrpc": "2.0", "id": shutdown, "method": "shutdown"})
        cancelled = answers(client, second, wait=0.2)
        assert [a.get("error", {}).get("code") for a in cancelled] == [-32800], cancelled
        client.no_response(shutdown, wait=0.3)
        release(holder)
        got = answers(client, first)
    assert len(got) == 1 and "first note" in got[0]["result"]["project"], got
    assert answers(client, shutdown) == [{"jsonrpc": "2.0", "id": shutdown, "result": None}]
    client.notify("exit")
    assert client.proc.wait(timeout=10) == 0
    assert "first note" in store.read_text() and "second note" not in store.read_text()


def test_a_clear_cancelled_while_it_asks_clears_nothing_when_the_answer_comes_later(
    client: RawClient,
) -> None:
    # The user answers "Clear" after the client cancelled the command: nothing is
    # cleared, the late answer to the server's own request is no internal error.
    client.held["window/showMessageRequest"] = []
    answer = client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": client.root.as_uri(),
            "capabilities": {"window": {"showMessage": {}}, "workspace": {"applyEdit": True}},
        },
        timeout=30,
    )
    assert "result" in answer, answer
    client.notify("initialized", {})
    uri = open_store(client)
    client.wait_published(uri, 1)
    msg_id = client.new_id()
    client.send(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": ADD,
            "params": {"command": "memory.clear", "arguments": [{"scope": "project"}]},
        }
    )
    asked = wait_held(client, "window/showMessageRequest")[0]
    client.notify("$/cancelRequest", {"id": msg_id})
    got = answers(client, msg_id, wait=0.3)
    assert [a.get("error", {}).get("code") for a in got] == [-32800], got
    client.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"title": "Clear"}})
    time.sleep(0.3)
    listed = client.request(ADD, {"command": "memory.list", "arguments": [{}]})
    assert listed["result"]["project"] == ["use pnpm", "run make test"], listed
    assert internal_errors(client) == []
    assert client.proc.poll() is None


def test_shutdown_after_a_cancel_of_a_begun_add_still_waits_for_its_answer(
    client: RawClient,
) -> None:
    # The client cancels an add that waits for another process's lock (begun: it will
    # write and answer its result), then shuts down: the cancel took the request off
    # pygls' list of requests in flight, and shutdown must still wait for its answer.
    from tests.lock_holder import held_lock, release

    store, _ = initialized_with_store(client)
    with held_lock(store, dict(os.environ)) as holder:
        first = send_add(client, "first note")
        time.sleep(0.3)
        client.notify("$/cancelRequest", {"id": first})
        time.sleep(0.1)
        shutdown = client.new_id()
        client.send({"jsonrpc": "2.0", "id": shutdown, "method": "shutdown"})
        client.no_response(shutdown, wait=0.3)
        release(holder)
        got = answers(client, first)
    assert len(got) == 1 and "first note" in got[0]["result"]["project"], got
    assert answers(client, shutdown) == [{"jsonrpc": "2.0", "id": shutdown, "result": None}]
    client.notify("exit")
    assert client.proc.wait(timeout=10) == 0


def test_a_begun_add_that_ends_after_shutdown_sends_no_buffer_edit(client: RawClient) -> None:
    # After shutdown pygls reads no answer of the client's and no didChange: an edit of
    # the open buffer sent then waited APPLY_TIMEOUT (5 s) for an answer it dropped,
    # and shutdown, which waits for the command, with it. The buffer is marked behind.
    from tests.lock_holder import held_lock, release

    client.replies["workspace/applyEdit"] = {"applied": True}
    store, _ = initialized_with_store(client)
    with held_lock(store, dict(os.environ)) as holder:
        first = send_add(client, "first note")
        time.sleep(0.3)
        shutdown = client.new_id()
        client.send({"jsonrpc": "2.0", "id": shutdown, "method": "shutdown"})
        time.sleep(0.2)
        release(holder)
        released = time.monotonic()
        got = answers(client, first, wait=0.1)
        ended = answers(client, shutdown, wait=0.1)
    assert time.monotonic() - released < 2.5, "shutdown waited for an edit it cannot get"
    assert len(got) == 1 and "first note" in got[0]["result"]["project"], got
    assert ended == [{"jsonrpc": "2.0", "id": shutdown, "result": None}]
    client.notify("exit")
    assert client.proc.wait(timeout=10) == 0
