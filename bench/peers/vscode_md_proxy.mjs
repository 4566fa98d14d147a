// A stand-in for VS Code's markdown extension host, so vscode-markdown-languageserver can
// run under the benchmark client.
//
// The server cannot tokenize markdown itself: it asks its client (`markdown/parse`) for
// markdown-it tokens of a document, and reads other files through `markdown/fs/*`.  This
// proxy spawns the server, relays every message between the benchmark client (our stdin
// and stdout) and the server unchanged, keeps the text of the documents the client opens
// (applying incremental changes as VS Code does), and answers those requests itself by
// running markdown-it, as VS Code's extension host does.  The proxy's own memory is not
// the server's: the benchmark counts only the server process (the proxy's children).
//
// Usage: node vscode_md_proxy.mjs --node-modules <dir with vscode-markdown-languageserver
// and markdown-it>

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { readFileSync, statSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const argIndex = process.argv.indexOf("--node-modules");
if (argIndex < 0 || !process.argv[argIndex + 1]) {
  process.stderr.write("usage: vscode_md_proxy.mjs --node-modules DIR\n");
  process.exit(2);
}
const nodeModules = process.argv[argIndex + 1];
const serverMain = join(nodeModules, "vscode-markdown-languageserver", "dist", "node", "workerMain.js");

// Start the server first: its start-up is what the client is waiting for.
const child = spawn(process.execPath, [serverMain, "--stdio"], { stdio: ["pipe", "pipe", "inherit"] });
child.on("exit", (code) => process.exit(code ?? 0));

const require = createRequire(join(nodeModules, "..", "package.json"));
const MarkdownIt = require("markdown-it");
const md = new MarkdownIt({ html: true });

/** uri -> current text of an open document */
const documents = new Map();

function frame(message) {
  const body = Buffer.from(JSON.stringify(message), "utf8");
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, "ascii"), body]);
}

/** Calls onMessage(message, rawFrame) for every complete JSON-RPC frame from stream. */
function readFrames(stream, onMessage) {
  let buffer = Buffer.alloc(0);
  stream.on("data", (chunk) => {
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
    for (;;) {
      const headerEnd = buffer.indexOf("\r\n\r\n");
      if (headerEnd < 0) return;
      const header = buffer.subarray(0, headerEnd).toString("ascii");
      const match = /Content-Length:\s*(\d+)/i.exec(header);
      if (!match) throw new Error(`bad header: ${header}`);
      const length = Number(match[1]);
      const start = headerEnd + 4;
      if (buffer.length < start + length) return;
      const raw = buffer.subarray(0, start + length);
      const message = JSON.parse(buffer.subarray(start, start + length).toString("utf8"));
      buffer = buffer.subarray(start + length);
      onMessage(message, raw);
    }
  });
}

function offsetAt(text, position) {
  let offset = 0;
  for (let line = 0; line < position.line; line++) {
    const next = text.indexOf("\n", offset);
    if (next < 0) return text.length;
    offset = next + 1;
  }
  return Math.min(offset + position.character, text.length);
}

function applyChanges(text, changes) {
  for (const change of changes) {
    if (!change.range) {
      text = change.text;
      continue;
    }
    const start = offsetAt(text, change.range.start);
    const end = offsetAt(text, change.range.end);
    text = text.slice(0, start) + change.text + text.slice(end);
  }
  return text;
}

function textOf(uri) {
  if (documents.has(uri)) return documents.get(uri);
  try {
    return readFileSync(fileURLToPath(uri), "utf8");
  } catch {
    return "";
  }
}

// What VS Code's extension host answers for the server's requests.
const handlers = {
  "markdown/parse": (params) => md.parse(typeof params.text === "string" ? params.text : textOf(params.uri), {}),
  "markdown/fs/readFile": (params) => Array.from(readFileSync(fileURLToPath(params.uri))),
  "markdown/fs/stat": (params) => {
    try {
      return { isDirectory: statSync(fileURLToPath(params.uri)).isDirectory() };
    } catch {
      return undefined;
    }
  },
  "markdown/fs/readDirectory": (params) =>
    readdirSync(fileURLToPath(params.uri), { withFileTypes: true }).map((entry) => [
      entry.name,
      { isDirectory: entry.isDirectory() },
    ]),
  "markdown/fs/watcher/create": () => null,
  "markdown/fs/watcher/delete": () => null,
  "markdown/findMarkdownFilesInWorkspace": () => [],
};

// client -> server: track documents, relay unchanged.
readFrames(process.stdin, (message, raw) => {
  const params = message.params;
  if (message.method === "textDocument/didOpen") {
    documents.set(params.textDocument.uri, params.textDocument.text);
  } else if (message.method === "textDocument/didChange") {
    const uri = params.textDocument.uri;
    documents.set(uri, applyChanges(documents.get(uri) ?? "", params.contentChanges));
  } else if (message.method === "textDocument/didClose") {
    documents.delete(params.textDocument.uri);
  }
  child.stdin.write(raw);
});
process.stdin.on("end", () => child.stdin.end());

// server -> client: answer the extension-host requests, relay the rest.
readFrames(child.stdout, (message, raw) => {
  const handler = message.id !== undefined && message.method ? handlers[message.method] : undefined;
  if (!handler) {
    process.stdout.write(raw);
    return;
  }
  let reply;
  try {
    const result = handler(message.params ?? {});
    reply = { jsonrpc: "2.0", id: message.id, result: result === undefined ? null : result };
  } catch (error) {
    reply = { jsonrpc: "2.0", id: message.id, error: { code: -32603, message: String(error) } };
  }
  child.stdin.write(frame(reply));
});
