// Runs vscode-client/src/processes.ts (bundled by the test into MODULE) against the real
// programs the test made, and prints what each call answered and how long it took, as JSON.
import * as fs from 'node:fs';
const { execText, findOnPath, installedServer, runStep, withLock } = await import(process.env.MODULE);
const cases = JSON.parse(process.env.CASES);
const out = {};
for (const [name, c] of Object.entries(cases)) {
  const started = Date.now();
  if (c.exec !== undefined) {
    const r = await execText(c.exec, c.args ?? [], c.timeout);
    out[name] = { ok: r.ok, stdoutLength: r.stdout.length, stdout: r.stdout.slice(0, 200), ms: Date.now() - started };
  } else if (c.lock !== undefined) {
    // Hold the lock for holdMs, logging when this process held it.
    await withLock(c.lock, async () => {
      fs.appendFileSync(c.log, `start ${process.pid}\n`);
      await new Promise((resolve) => setTimeout(resolve, c.holdMs));
      fs.appendFileSync(c.log, `end ${process.pid}\n`);
    });
    out[name] = { ms: Date.now() - started };
  } else if (c.step !== undefined) {
    // A setup step the user cancels after abortMs.
    const abort = new AbortController();
    setTimeout(() => abort.abort(), c.abortMs);
    const r = await runStep(c.step, c.args ?? [], () => {}, abort.signal);
    out[name] = { code: r.code, text: r.text.slice(0, 200), ms: Date.now() - started };
  } else if (c.installed !== undefined) {
    out[name] = { installed: installedServer(c.installed) ?? null };
  } else {
    out[name] = { found: findOnPath(c.find, c.untrusted ?? [], c.path) ?? null };
  }
}
console.log(JSON.stringify(out));
process.exit(0);
