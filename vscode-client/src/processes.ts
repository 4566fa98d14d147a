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

/** A program of a venv (`bin/` on POSIX, `Scripts/*.exe` on Windows). */
export function venvBin(venv: string, name: string): string {
  return process.platform === 'win32' ? path.join(venv, 'Scripts', `${name}.exe`) : path.join(venv, 'bin', name);
}

/** What the private venv holds, written into it last, when pip has finished. */
export interface InstalledServer {
  wheel: string;
  sha256: string;
  python: string;
}

const MARKER = 'memory-ls-installed.json';

/**
 * The private server the venv holds, read from the venv itself (every window shares it, and one
 * window's memento may not have seen another's install yet): only when its `memory-ls` script
 * exists and the marker pip's success wrote is there. A venv whose install was interrupted has
 * neither, whatever a record elsewhere says.
 */
export function installedServer(venv: string): InstalledServer | undefined {
  if (!fs.existsSync(venvBin(venv, 'memory-ls'))) {
    return undefined;
  }
  try {
    const data = JSON.parse(fs.readFileSync(path.join(venv, MARKER), 'utf8')) as Partial<InstalledServer>;
    if (typeof data.wheel === 'string' && typeof data.sha256 === 'string' && typeof data.python === 'string') {
      return { wheel: data.wheel, sha256: data.sha256, python: data.python };
    }
  } catch {
    // no marker: not (fully) installed by this version of the setup
  }
  return undefined;
}

/** Record a finished install in the venv (see {@link installedServer}). */
export function markInstalled(venv: string, installed: InstalledServer): void {
  fs.writeFileSync(path.join(venv, MARKER), JSON.stringify(installed));
}

/**
 * Run `task` while holding `lockDir` (made with an atomic mkdir), so two windows setting up the
 * server at once take turns instead of deleting each other's half-made venv. A lock whose owner
 * process is gone, or older than `staleMs`, is taken over (a window killed mid-install).
 */
export async function withLock<T>(lockDir: string, task: () => Promise<T>, staleMs = 15 * 60_000): Promise<T> {
  fs.mkdirSync(path.dirname(lockDir), { recursive: true });
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw error;
      }
    }
    if (lockIsStale(lockDir, staleMs)) {
      fs.rmSync(lockDir, { recursive: true, force: true });
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  try {
    fs.writeFileSync(path.join(lockDir, 'owner'), String(process.pid));
    return await task();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

function lockIsStale(lockDir: string, staleMs: number): boolean {
  try {
    if (Date.now() - fs.statSync(lockDir).mtimeMs > staleMs) {
      return true;
    }
    const pid = Number(fs.readFileSync(path.join(lockDir, 'owner'), 'utf8'));
    if (!Number.isInteger(pid) || pid <= 0) {
      return false; // being written: wait
    }
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // ESRCH: its owner is gone. ENOENT: no owner file yet (just made) or the lock was released.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Run a setup step (`python -m venv`, pip) without a shell, passing its output to `onText` as it
 * comes; `signal` cancels it. Cancelling kills the step's whole process group with SIGKILL and
 * answers at once: `child.kill()`'s SIGTERM, ignored by a hostile `memoryLs.pythonPath`, left
 * the cancelled setup waiting forever.
 */
export function runStep(
  command: string,
  args: string[],
  onText: (text: string) => void,
  signal: AbortSignal,
): Promise<{ code: number; text: string }> {
  return new Promise((resolve) => {
    let text = '';
    let settled = false;
    const posix = process.platform !== 'win32';
    const finish = (code: number): void => {
      if (!settled) {
        settled = true;
        signal.removeEventListener('abort', cancel);
        resolve({ code, text });
      }
    };
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: posix, windowsHide: true, shell: false });
    const cancel = (): void => {
      kill(child, posix);
      child.stderr?.destroy();
      finish(-1);
    };
    const collect = (chunk: Buffer): void => {
      const part = chunk.toString();
      text += part;
      onText(part);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    child.on('error', (error) => {
      text += String(error);
      onText(`${String(error)}\n`);
      finish(-1);
    });
    child.on('close', (code) => finish(signal.aborted ? -1 : (code ?? -1)));
    if (signal.aborted) {
      cancel();
    } else {
      signal.addEventListener('abort', cancel);
    }
  });
}
