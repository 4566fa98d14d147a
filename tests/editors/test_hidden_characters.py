"""The characters shown escaped are one definition, :data:`memory_ls.core.text.UNSEEN_RANGES`;
the VS Code client and the Neovim helper hold copies (they escape a proposal's text before
a reviewer reads it, SPEC §12), and these tests hold each copy to it, code point by code
point: the TypeScript regular expression run by Node, the Lua function run by Neovim.

Lone surrogates are left out: the server never sends one (it writes U+FFFD) and Lua's
UTF-8 strings cannot hold one. Neovim is asked about the planes that hold any such
character (0, 1 and 14: one call per character would take ten seconds for all seventeen).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from memory_ls.core.text import UNSEEN_RANGES, escape_unseen

from .conftest import EDITORS, REPO, require, run_headless
from .test_neovim import nvim_011, nvim_07

NVIM_PLANES = (0, 1, 14)
"""The planes Neovim is asked about (the Lua script's loop says the same)."""
INBOX_TS = REPO / "vscode-client" / "src" / "inbox.ts"
SAMPLE = "tab\there\nnew\u202eline\u00ad\u2066x\U000e0041\u0600 é 😀 日本"


def _ranges(codes: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for code in codes:
        if out and out[-1][1] == code - 1:
            out[-1][1] = code
        else:
            out.append([code, code])
    return [(lo, hi) for lo, hi in out]


def _merged(ranges: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """``ranges`` with touching ones joined, as :func:`_ranges` reports them."""
    return _ranges([code for lo, hi in ranges for code in range(lo, hi + 1)])


def test_the_vscode_client_escapes_what_the_server_escapes(tmp_path: Path) -> None:
    node = shutil.which("node")
    require(node, "node is not installed")
    assert node is not None
    source = INBOX_TS.read_text(encoding="utf-8")
    found = re.search(r"^const UNSEEN =\s*(/.+/[a-z]*);$", source, re.MULTILINE)
    assert found, "vscode-client/src/inbox.ts has no `const UNSEEN = /…/;`"
    script = tmp_path / "unseen.mjs"
    script.write_text(
        f"const UNSEEN = {found.group(1)};\n"
        "const out = [];\n"
        "for (let code = 0; code < 0x110000; code++) {\n"
        "  if (code >= 0xd800 && code <= 0xdfff) continue;\n"
        "  const char = String.fromCodePoint(code);\n"
        # The whole character, not half of a surrogate pair, must be what matches.
        "  if (char.replace(UNSEEN, '') === '') out.push(code);\n"
        "}\n"
        "console.log(JSON.stringify(out));\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [node, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert _ranges(json.loads(proc.stdout)) == _merged(UNSEEN_RANGES)


LUA = """
local out = { errors = {} }
dofile(vim.env.NVIM_COMMON).run(function()
  vim.opt.runtimepath:append(vim.env.EDITORS_NVIM)
  local escape = require('memory_ls').escape_unseen
  local function utf8(code)
    if code < 0x80 then
      return string.char(code)
    elseif code < 0x800 then
      return string.char(0xC0 + math.floor(code / 64), 0x80 + code % 64)
    elseif code < 0x10000 then
      return string.char(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64,
        0x80 + code % 64)
    end
    return string.char(0xF0 + math.floor(code / 262144), 0x80 + math.floor(code / 4096) % 64,
      0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
  end
  local codes = {}
  for code = 0, 0xEFFFF do
    if (code < 0xD800 or code > 0xDFFF) and (code < 0x20000 or code >= 0xE0000) then
      local char = utf8(code)
      if escape(char) ~= char then
        table.insert(codes, code)
      end
    end
  end
  out.codes = codes
  local sample = io.open(vim.env.SAMPLE_FILE, 'rb')
  out.sample = escape(sample:read('*a'))
  sample:close()
end, out)
"""


def test_the_neovim_helper_escapes_what_the_server_escapes(tmp_path: Path) -> None:
    binaries = [b for b in (nvim_011(), nvim_07()) if b is not None]
    require(binaries, "Neovim is not installed")
    script, sample = tmp_path / "unseen.lua", tmp_path / "sample.txt"
    script.write_text(LUA, encoding="utf-8")
    sample.write_bytes(SAMPLE.encode("utf-8"))
    for binary in binaries:
        result = tmp_path / f"{binary.name}.json"
        env = {
            "HOME": str(tmp_path),
            "PATH": "/usr/bin:/bin",
            "EDITORS_NVIM": str(EDITORS / "nvim"),
            "RESULT_FILE": str(result),
            "SAMPLE_FILE": str(sample),
            "NVIM_COMMON": str(Path(__file__).with_name("nvim_common.lua")),
        }
        command = [str(binary), "--headless", "-u", "NONE", "-i", "NONE", "-n"]
        proc = run_headless([*command, "-c", f"luafile {script}"], tmp_path, env)
        assert result.exists(), f"{binary}: no report (exit {proc.returncode}) {proc.stderr}"
        report = json.loads(result.read_text(encoding="utf-8"))
        assert not report["errors"], report["errors"]
        assert {code >> 16 for lo, hi in UNSEEN_RANGES for code in (lo, hi)} <= set(NVIM_PLANES)
        assert _ranges(report["codes"]) == _merged(UNSEEN_RANGES), binary
        assert report["sample"] == escape_unseen(SAMPLE), binary
