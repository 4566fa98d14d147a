// Running the programs the setup only asks questions of (a Python's version, whether it has
// memory-ls) and finding `memory-ls` on PATH, safely against what a hostile setting, PATH or
// program can do. No `vscode` import: tests/editors/test_vscode_processes.py runs this module in
// plain Node against real programs.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** How much of a program's standard output is kept: a version line needs a few bytes. */
const MAX_OUTPUT = 64 * 1024;

/**
 * Run `command args` without a shell and answer within `timeoutMs`, whatever the program does.
 * `execFile`'s own timeout only sends SIGTERM and then waits for the output pipes to close: a
 * program that ignores SIGTERM, or leaves a child holding its stdout, kept the extension waiting
 * forever (no server, and "Memory: Set up server" never answered). Here the whole process group
 * is killed with SIGKILL and the answer does not wait for the pipes.
 */
export function execText(command: string, args: string[], timeoutMs = 20_000): Promise<{ ok: boolean; stdout: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    let settled = false;
    const posix = process.platform !== 'win32';
    const finish = (ok: boolean): void => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve({ ok, stdout });
      }
    };
    let child: ReturnType<typeof spawn>;
    try {
      // detached: its own process group, so a timeout kills its children too.
      child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'], detached: posix, windowsHide: true, shell: false });
    } catch {
      resolve({ ok: false, stdout: '' });
      return;
    }
    const timer = setTimeout(() => {
      kill(child, posix);
      finish(false);
    }, timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdout.length < MAX_OUTPUT) {
        stdout += chunk.toString().slice(0, MAX_OUTPUT - stdout.length);
      }
    });
    child.on('error', () => finish(false));
    child.on('exit', (code) => {
      // Its output is read up to the pipe's end, unless a child it left keeps the pipe open.
      setTimeout(() => {
        kill(child, posix);
        finish(code === 0);
      }, 1000).unref();
    });
    child.on('close', (code) => finish(code === 0));
  });
}

function kill(child: ReturnType<typeof spawn>, posix: boolean): void {
  try {
    if (posix && child.pid !== undefined) {
      process.kill(-child.pid, 'SIGKILL');
    } else {
      child.kill('SIGKILL');
    }
  } catch {
    // already gone
  }
  child.stdout?.destroy();
}

/**
 * The first executable `name` on PATH, skipping what must not be trusted to run: a relative
 * entry (`.` or `bin`, resolved against whatever the current folder happens to be) and any
 * folder inside `untrusted` (the folders of a workspace the user has not trusted: a repository's
 * own `bin/memory-ls` must not start because a shell put it on PATH).
 */
export function findOnPath(
  name: string,
  untrusted: readonly string[] = [],
  pathValue = process.env['PATH'] ?? '',
): string | undefined {
  const extensions = process.platform === 'win32' ? (process.env['PATHEXT'] ?? '.EXE;.CMD;.BAT').split(';') : [''];
  const inside = untrusted.map((folder) => realOrSame(folder));
  for (const folder of pathValue.split(path.delimiter)) {
    if (folder === '' || !path.isAbsolute(folder)) {
      continue;
    }
    const real = realOrSame(folder);
    if (inside.some((root) => real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep))) {
      continue;
    }
    for (const extension of extensions) {
      const candidate = path.join(folder, name + extension);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) {
          return candidate;
        }
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

function realOrSame(folder: string): string {
  try {
    return fs.realpathSync(folder);
  } catch {
    return path.resolve(folder);
  }
}
