// Build the memory-ls wheel from the repository and put it in dist/server/, which the .vsix carries:
// the extension installs it into a private venv when no memory-ls is configured or on PATH.
// The Python is $MEMORY_LS_PYTHON, else the repository's .venv, else python3 (any with pip).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(root, '..');
const venvPython = join(repo, '.venv', 'bin', 'python');
const python = process.env.MEMORY_LS_PYTHON || (existsSync(venvPython) ? venvPython : 'python3');

const scratch = mkdtempSync(join(tmpdir(), 'memory-ls-wheel-'));
try {
  const built = spawnSync(
    python,
    ['-m', 'pip', 'wheel', '--no-deps', '--quiet', '--disable-pip-version-check', '--wheel-dir', scratch, repo],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (built.status !== 0) {
    console.error(`bundle-wheel: ${python} -m pip wheel failed (exit ${built.status ?? built.error})`);
    process.exit(1);
  }
  const wheels = readdirSync(scratch).filter((name) => /^memory_ls-.+-py3-none-any\.whl$/.test(name));
  if (wheels.length !== 1) {
    console.error(`bundle-wheel: expected one memory_ls wheel, found ${JSON.stringify(wheels)}`);
    process.exit(1);
  }
  const out = join(root, 'dist', 'server');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  copyFileSync(join(scratch, wheels[0]), join(out, wheels[0]));
  console.log(`bundled dist/server/${wheels[0]}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
