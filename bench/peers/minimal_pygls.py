"""The minimal pygls 2 reference server of BENCH-NOTES.

It does the least a memory-file server can do: on every open and change it re-reads the
whole document, parses every bullet, computes the near-duplicate key of each note and
publishes one ``duplicate`` warning per repeated key.  No incremental state, no caches.
It is the floor a pygls server pays per keystroke on a given store.

``--with-commands`` also registers a ``memory.add`` command (append a bullet to the
store named by ``uri``); the smoke test uses it to exercise the harness's command path
without memory-ls.  Run: ``python bench/peers/minimal_pygls.py [--with-commands]``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

server = LanguageServer("minimal-pygls-bench", "0.1")


def _normalise(text: str) -> str:
    if not text.isprintable() and _CONTROL.search(text):
        text = _CONTROL.sub(" ", text)
    return " ".join(text.split())


def _key(text: str) -> str:
    return text.lower().rstrip(".!?,;:").strip()


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _bullet(line: str) -> tuple[int, str] | None:
    """(start of the text, the raw text) if ``line`` is a bullet, else None."""
    body = line.lstrip(" \t")
    if len(body) < 3 or body[0] not in "-*" or body[1] not in " \t":
        return None
    text = body[2:].lstrip(" \t")
    return len(line) - len(text), text.rstrip()


def _diagnostics(source: str) -> list[types.Diagnostic]:
    seen: dict[str, int] = {}
    found: list[types.Diagnostic] = []
    for number, line in enumerate(source.split("\n")):
        bullet = _bullet(line)
        if bullet is None:
            continue
        offset, raw = bullet
        note = _normalise(raw)
        if not note:
            continue
        first = seen.setdefault(_key(note), number)
        if first != number:
            start = _utf16_len(line[:offset])
            end = start + _utf16_len(raw)
            found.append(
                types.Diagnostic(
                    range=types.Range(
                        start=types.Position(line=number, character=start),
                        end=types.Position(line=number, character=end),
                    ),
                    message=f"Near-duplicate of the note on line {first + 1}",
                    severity=types.DiagnosticSeverity.Warning,
                    code="duplicate",
                    source="memory",
                )
            )
    return found


def _publish(ls: LanguageServer, uri: str) -> None:
    document = ls.workspace.get_text_document(uri)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=_diagnostics(document.source)
        )
    )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


def _memory_add(ls: LanguageServer, *arguments: Any) -> dict[str, Any]:
    """Append ``- text`` to ``<uri>/.pi/memory.md`` (a stand-in for memory-ls's command)."""
    argument = arguments[0] if arguments else {}
    text = _normalise(str(argument.get("text", "")))
    root = Path(unquote(urlparse(str(argument.get("uri", ""))).path))
    store = root / ".pi" / "memory.md"
    body = store.read_text(encoding="utf-8") if store.exists() else ""
    keys = {_key(_normalise(b[1])) for b in map(_bullet, body.split("\n")) if b}
    changed = _key(text) not in keys
    if changed:
        store.write_text(body.rstrip() + f"\n- {text}\n", encoding="utf-8")
    return {"action": "add", "scope": "project", "changed": changed, "entry": text}


def main() -> None:
    parser = argparse.ArgumentParser(description="minimal pygls reference server")
    parser.add_argument("--with-commands", action="store_true")
    args = parser.parse_args()
    if args.with_commands:
        server.command("memory.add")(_memory_add)
    server.start_io()


if __name__ == "__main__":
    main()
