// Drives real VS Code (code-server) in Debian's Chromium with playwright-core; run by test_vscode.py.
// Environment: CODE_SERVER_URL, WORKSPACE, PROJECT_STORE, GLOBAL_STORE, RESULT_FILE, ARTIFACTS_DIR.
// Writes a JSON report (every observation, and the failing step if any) to RESULT_FILE.
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const url = env('CODE_SERVER_URL');
const workspace = env('WORKSPACE');
const projectStore = env('PROJECT_STORE');
const globalStore = env('GLOBAL_STORE');
const artifacts = env('ARTIFACTS_DIR');
mkdirSync(artifacts, { recursive: true });

const report = { steps: [], screenshots: [] };
const STEP_TIMEOUT = 30_000;
// The fix that removes the later near-duplicate: keep the first wording (or, for an exact
// duplicate, remove the later one).
const FIX = /Keep “🎉 ship on fridays is fine”|remove.*duplicate/i;
// The global note the reload step rewrites behind the editor's back (it survives the forget step).
const RELOADED_NOTE = 'write commit messages in the imperative';
let page;

async function step(name, fn) {
  const started = Date.now();
  try {
    const value = await fn();
    report.steps.push({ name, ms: Date.now() - started });
    return value;
  } catch (error) {
    report.failed = { step: name, error: String(error && error.stack ? error.stack : error) };
    throw error;
  }
}

async function screenshot(name) {
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path });
  report.screenshots.push(path);
  return path;
}

async function waitFor(predicate, what, timeout = STEP_TIMEOUT) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await predicate();
    if (last) return last;
    await page.waitForTimeout(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const read = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

/** Quick input rows as text (label + description). */
async function quickInputRows() {
  return page.$$eval('.quick-input-widget .quick-input-list .monaco-list-row', (rows) =>
    rows.map((row) => row.textContent ?? ''),
  );
}

async function quickInputVisible() {
  return page.isVisible('.quick-input-widget .quick-input-box input');
}

/** Run a palette command by its title, the way a person does: F1, type, Enter. */
async function runCommand(title) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: STEP_TIMEOUT });
  await input.fill(`>${title}`);
  // The row whose label is exactly the title (the palette also lists similar and recent commands).
  let labels = [];
  const index = await waitFor(async () => {
    labels = await page.$$eval('.quick-input-widget .quick-input-list .monaco-list-row', (rows) =>
      rows.map((row) => (row.querySelector('.label-name')?.textContent ?? '').replace(/\u00a0/g, ' ').trim()),
    );
    const found = labels.indexOf(title);
    return found >= 0 ? found + 1 : null;
  }, `the palette to offer "${title}"`).catch((error) => {
    throw new Error(`${error.message}; it offers ${JSON.stringify(labels)}`);
  });
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row').nth(index - 1).click();
}

/** Run *Memory: Reload*; its notification, which must be a report and not an error. */
async function reload() {
  await runCommand('Notifications: Clear All Notifications');
  // The toasts leave the page a moment after the command: the first reload's report, still
  // there, was once read as the second's.
  await waitFor(
    async () => !(await notifications()).some((text) => text.startsWith('Memory:')),
    'the earlier notifications to clear',
  );
  await runCommand('Memory: Reload');
  const message = await waitFor(
    async () => (await notifications()).find((text) => text.startsWith('Memory:')) ?? null,
    'a notification from Memory: Reload',
  );
  if (!message.includes('reloaded both stores')) throw new Error(`Memory: Reload failed: ${message}`);
  return message;
}

/** The text of every notification toast on screen. */
async function notifications() {
  return page
    .$$eval('.notifications-toasts .notification-list-item-message', (els) => els.map((el) => el.textContent ?? ''))
    .catch(() => []);
}

/** Pick the quick-input row whose text contains `text`. */
async function pickRow(text) {
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
  await row.waitFor({ state: 'visible', timeout: STEP_TIMEOUT });
  await row.click();
}

async function statusItems() {
  return page.$$eval('.statusbar-item', (els) => els.map((el) => el.textContent ?? ''));
}

/** `memory-ls add --propose`, as an agent's MCP server with --review would queue it. */
function proposeFromOutside(by, text) {
  execFileSync(env('MEMORY_LS'), ['add', '--propose', '--by', by, '--project', workspace, text], {
    env: process.env,
    stdio: 'pipe',
  });
}

async function waitForStore(text, what) {
  return waitFor(async () => {
    const current = read(projectStore);
    return current.includes(text) ? current : null;
  }, what);
}

async function editorText() {
  return page.$$eval('.editor-group-container.active .monaco-editor .view-lines .view-line', (lines) =>
    lines.map((line) => (line.textContent ?? '').replace(/\u00a0/g, ' ')).join('\n'),
  );
}

const scenario = process.env.SCENARIO || 'main';

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 860 } });
    page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    if (scenario === 'setup') {
      await setupScenario();
    } else {
      await mainScenario();
    }
  } catch (error) {
    if (page) {
      await screenshot('vscode-failure').catch(() => undefined);
      report.notifications = await notifications();
    }
    report.failed ??= { step: 'driver', error: String(error && error.stack ? error.stack : error) };
  } finally {
    await browser.close();
  }
}

async function openWorkbench() {
  await step('open workbench', async () => {
      await page.goto(`${url}/?folder=${encodeURIComponent(workspace)}`, { waitUntil: 'domcontentloaded' });
      await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
      await page.locator('.statusbar').waitFor({ state: 'visible', timeout: 60_000 });
      await page.waitForTimeout(1500);
    });
}

async function openMemoryFile() {
    await step('open .pi/memory.md', async () => {
      await page.keyboard.press('Escape');
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await input.waitFor({ state: 'visible' });
      await input.fill('.pi/memory.md');
      await pickRow('memory.md');
      await waitFor(async () => (await editorText()).includes('Pi memory'), 'the memory file in the editor', 45_000);
    });
}

/** The Problems panel's rows once it lists a duplicate and a too-long note. */
async function memoryProblems(timeout = 60_000) {
  await runCommand('Problems: Focus on Problems View');
  return waitFor(async () => {
    const rows = await page.$$eval('.markers-panel .monaco-list-row', (els) => els.map((el) => el.textContent ?? ''));
    return rows.some((row) => row.includes('duplicate')) && rows.some((row) => row.includes('too-long')) ? rows : null;
  }, 'a duplicate and a too-long problem', timeout);
}

async function mainScenario() {
    await openWorkbench();
    await openMemoryFile();

    report.problems = await step('Problems panel lists the duplicate from source memory', () => memoryProblems());

    report.statusBar = await step('status bar shows the counts', async () =>
      waitFor(async () => {
        const items = await page.$$eval('.statusbar-item', (els) => els.map((el) => el.textContent ?? ''));
        // Non-zero counts: until the server has read both stores the item may show zeros.
        return items.find((text) => /[1-9]\d* project, [1-9]\d* global/.test(text) && /\d+\/\d+ B/.test(text)) ?? null;
      }, 'the memory status-bar item'),
    );

    await screenshot('vscode-problems');

    report.quickFix = await step('apply the duplicate quick fix from the editor, then save', async () => {
      // Put the cursor on the duplicate (line 6) and open the quick fix menu (Ctrl+.).
      await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
      await page.keyboard.press('Control+G');
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await input.waitFor({ state: 'visible' });
      await input.fill(':6:4');
      await page.keyboard.press('Enter');
      await page.waitForTimeout(500);
      await page.keyboard.press('Control+.');
      const menu = page.locator('.action-widget .monaco-list-row');
      await menu.first().waitFor({ state: 'visible' });
      const titles = await menu.allTextContents();
      const index = titles.findIndex((title) => FIX.test(title));
      if (index < 0) throw new Error(`no duplicate quick fix in ${JSON.stringify(titles)}`);
      // Move the keyboard focus to the fix (clicks on this widget are flaky headless) and apply it.
      for (let i = 0; i < titles.length + 2; i += 1) {
        const focused = await page.getAttribute('.action-widget .monaco-list-row.focused', 'aria-label').catch(() => null);
        if (focused && FIX.test(focused)) break;
        await page.keyboard.press('ArrowDown');
      }
      await page.keyboard.press('Enter');
      await page.waitForTimeout(500);
      await page.keyboard.press('Control+S');
      const text = await waitFor(async () => {
        const current = read(projectStore);
        return current.includes('🎉 Ship on Fridays is fine.') ? null : current;
      }, 'the duplicate line to be gone from disk');
      return { titles, chosen: titles[index], fileAfter: text };
    });

    report.recall = await step('Memory: Show recall preview shows the recall body', async () => {
      await runCommand('Memory: Show recall preview');
      return waitFor(async () => {
        const text = await editorText();
        return text.includes('[MEMORY]') ? text : null;
      }, 'the recall body in an editor');
    });

    report.browse = await step('Memory: Browse notes lists both scopes', async () => {
      await runCommand('Memory: Browse notes');
      const rows = await waitFor(async () => {
        const current = await quickInputRows();
        return current.some((row) => row.includes('global')) && current.some((row) => row.includes('project')) ? current : null;
      }, 'notes of both scopes in the browser');
      const title = await page.textContent('.quick-input-widget .quick-input-title');
      await screenshot('vscode-browse');
      return { rows, title };
    });

    report.forget = await step('Browse notes: forget a global note (after a confirm)', async () => {
      await pickRow('prefer ripgrep over grep');
      await pickRow('Forget');
      const button = page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Forget' });
      await button.first().waitFor({ state: 'visible' });
      await button.first().click();
      const text = await waitFor(async () => {
        const current = read(globalStore);
        return current.includes('prefer ripgrep over grep') ? null : current;
      }, 'the global note to be gone from disk');
      // The browser opens again on the remaining notes (its title carries the counts;
      // until then the note's follow-up menu may still be showing).
      let title = '';
      const rows = await waitFor(async () => {
        const current = await quickInputRows();
        title = (await page.textContent('.quick-input-widget .quick-input-title')) ?? '';
        const browsing = title.includes(' project, ') && title.includes(' global');
        return browsing && current.length > 0 && !current.some((row) => row.includes('prefer ripgrep')) ? current : null;
      }, 'the browser to list the remaining notes');
      await page.keyboard.press('Escape');
      return { globalAfter: text, rowsAfter: rows, titleAfter: title };
    });

    report.statusBarAfter = await step('status bar follows the change', async () =>
      waitFor(async () => {
        const items = await page.$$eval('.statusbar-item', (els) => els.map((el) => el.textContent ?? ''));
        return items.find((text) => /, 1 global/.test(text)) ?? null;
      }, 'the status bar to show 1 global note'),
    );

    await step('final screenshot', async () => {
      // Back to the memory file (close the recall preview), Problems panel open, then the browser.
      await runCommand('View: Close Editor');
      await waitFor(async () => (await editorText()).includes('Pi memory'), 'the memory file to be active again');
      await runCommand('Problems: Focus on Problems View');
      await runCommand('Memory: Browse notes');
      await waitFor(async () => (await quickInputRows()).length > 0, 'the browser');
      await page.waitForTimeout(500);
      await screenshot('vscode-screenshot');
      await page.keyboard.press('Escape');
    });

    report.reload = await step('Memory: Reload after a store changed on disk', async () => {
      // A change the store's stamp (mtime, size, inode) does not show, as on a file system with a
      // coarse clock: only an explicit reload sees it, so the server's file watcher cannot see it
      // first. The first reload caches the store with that stamp.
      const stamp = Math.floor(Date.now() / 1000) - 60;
      utimesSync(globalStore, stamp, stamp);
      const first = await reload();
      const before = read(globalStore);
      if (!before.includes(RELOADED_NOTE)) throw new Error(`no "${RELOADED_NOTE}" in ${before}`);
      writeFileSync(globalStore, before.replace(RELOADED_NOTE, RELOADED_NOTE.toUpperCase()));
      utimesSync(globalStore, stamp, stamp);
      const message = await reload();
      return { first, message };
    });

    // SPEC §15 in VS Code: export to AGENTS.md, export-stale on it, import a Gemini file.
    const agents = join(workspace, 'AGENTS.md');
    report.export = await step('Memory: Export to AGENTS.md… writes the block', async () => {
      await runCommand('Notifications: Clear All Notifications');
      await runCommand('Memory: Export to AGENTS.md…');
      // The save dialog (code-server's simple dialog) offers the workspace's AGENTS.md.
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await waitFor(async () => (await input.inputValue().catch(() => '')).endsWith('AGENTS.md'), 'the save dialog on AGENTS.md');
      await page.keyboard.press('Enter');
      const message = await waitFor(
        async () => (await notifications()).find((text) => text.startsWith('Memory:')) ?? null,
        'a notification from the export',
      );
      const file = await waitFor(async () => (read(agents).includes('<!-- memory-ls:end -->') ? read(agents) : null), 'the block on disk');
      return { message, file };
    });

    report.exportStale = await step('export-stale on AGENTS.md once a note is added', async () => {
      // The export's notification offers to open the file.
      const open = page.locator('.notifications-toasts .monaco-button', { hasText: 'Open' });
      await open.first().waitFor({ state: 'visible' });
      await open.first().click();
      await waitFor(async () => (await editorText()).includes('memory-ls:begin'), 'AGENTS.md in the editor', 45_000);
      writeFileSync(projectStore, `${read(projectStore).trimEnd()}\n- a note added after the export\n`);
      await runCommand('Problems: Focus on Problems View');
      return waitFor(async () => {
        const rows = await page.$$eval('.markers-panel .monaco-list-row', (els) => els.map((el) => el.textContent ?? ''));
        return rows.some((row) => row.includes('export-stale')) ? rows : null;
      }, 'an export-stale problem on AGENTS.md', 60_000);
    });

    report.import = await step('Memory: Import notes… imports a Gemini file', async () => {
      const gemini = join(workspace, 'gemini-notes.md');
      writeFileSync(gemini, '# Context\n\n## Gemini Added Memories\n- imported from gemini\n');
      await runCommand('Notifications: Clear All Notifications');
      await runCommand('Memory: Import notes…');
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await input.waitFor({ state: 'visible' });
      // The simple open dialog fills in the workspace folder once it is ready; typing before
      // that is overwritten (seen under load), so wait for it, then type until it holds.
      await waitFor(async () => (await input.inputValue().catch(() => '')).endsWith('/'), 'the open dialog on the folder');
      await waitFor(async () => {
        await input.fill(gemini);
        await page.waitForTimeout(300);
        return (await input.inputValue().catch(() => '')) === gemini;
      }, 'the open dialog to hold the Gemini file');
      await page.keyboard.press('Enter');
      await pickRow('pick by content');
      await pickRow('this repository');
      const message = await waitFor(
        async () => (await notifications()).find((text) => text.startsWith('Memory: Imported')) ?? null,
        'the import summary',
      );
      return { message, store: read(projectStore) };
    });

    report.sync = await step('Memory: Sync global store', async () => {
      // The agent dir is a clone with an upstream (test_vscode.py): the steps above changed the
      // global store, so the sync commits, pulls and pushes, and the server says so.
      await runCommand('Notifications: Clear All Notifications');
      await runCommand('Memory: Sync global store');
      return waitFor(
        async () => (await notifications()).find((text) => text.startsWith('Memory: Synced') || text.includes('Error')) ?? null,
        'a notification from Memory: Sync global store',
        60_000,
      );
    });

    report.review = await step('a proposal from outside is accepted from its notification', async () => {
      await runCommand('Notifications: Clear All Notifications');
      proposeFromOutside('claude-code', 'run make lint before pushing');
      const status = await waitFor(
        async () => (await statusItems()).find((text) => text.includes('1 to review')) ?? null,
        'the status bar to count the proposal',
      );
      const toast = page
        .locator('.notifications-toasts .notification-list-item', {
          hasText: 'claude-code proposes to remember: run make lint before pushing',
        })
        .first();
      await toast.waitFor({ state: 'visible', timeout: STEP_TIMEOUT });
      const message = (await toast.textContent()) ?? '';
      await screenshot('vscode-review-notification');
      await toast.locator('.monaco-button', { hasText: 'Accept' }).first().click();
      const fileAfter = await waitForStore('run make lint before pushing', 'the accepted note on disk');
      await waitFor(
        async () => !(await statusItems()).some((text) => text.includes('to review')),
        'the review count to go to zero',
      );
      return { status, message, fileAfter };
    });

    report.reviewPick = await step('Memory: Review inbox accepts a proposal', async () => {
      proposeFromOutside('codex', 'prefer small commits');
      await waitFor(
        async () => (await statusItems()).find((text) => text.includes('1 to review')) ?? null,
        'the status bar to count the second proposal',
      );
      await runCommand('Notifications: Clear All Notifications');
      await runCommand('Memory: Review inbox');
      const rows = await waitFor(async () => {
        const current = await quickInputRows();
        return current.some((row) => row.includes('prefer small commits')) ? current : null;
      }, 'the proposal in the review quick pick');
      await page.waitForTimeout(300);
      await screenshot('vscode-review');
      await pickRow('prefer small commits');
      await pickRow('run the change now');
      const fileAfter = await waitForStore('prefer small commits', 'the note accepted from the quick pick on disk');
      await waitFor(
        async () => !(await statusItems()).some((text) => text.includes('to review')),
        'the review count to go to zero again',
      );
      return { rows, fileAfter };
    });

    await browseActions();
}

/** Browse notes: pick a note, then an action from its follow-up menu. */
async function browseAndAct(note, action) {
  await runCommand('Memory: Browse notes');
  await waitFor(async () => (await quickInputRows()).some((row) => row.includes(note)), `"${note}" in the browser`);
  await pickRow(note);
  await waitFor(async () => (await page.textContent('.quick-input-widget .quick-input-title').catch(() => ''))?.includes(note), 'the note\'s action menu');
  await pickRow(action);
}

/** After an action the browser opens again on the notes: wait for it, then close it. */
async function closeReopenedBrowser() {
  await waitFor(async () => {
    const title = (await page.textContent('.quick-input-widget .quick-input-title').catch(() => '')) ?? '';
    return title.includes(' project, ') && (await quickInputRows()).length > 0;
  }, 'the browser to open again');
  await page.keyboard.press('Escape');
  await waitFor(async () => !(await quickInputVisible()), 'the browser to close');
}

/** Type into the quick input box once it holds `prefilled`, then accept. */
async function answerInput(prefilled, text) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await waitFor(async () => (await input.inputValue().catch(() => '')) === prefilled, `the input box pre-filled with "${prefilled}"`);
  if (text !== undefined) {
    // Filled again until it holds: once (clean CI, under load) the box still took its
    // pre-filled value after the fill, and Enter sent the unchanged note.
    await waitFor(async () => {
      await input.fill(text);
      await page.waitForTimeout(100);
      return (await input.inputValue().catch(() => '')) === text;
    }, `the input box holding "${text}"`);
  }
  await page.keyboard.press('Enter');
}

/** Edit, move and merge from Browse notes, each checked on disk. */
async function browseActions() {
  const edited = 'tests need DATABASE_URL and REDIS_URL';
  report.edit = await step('Browse notes: edit a project note', async () => {
    await browseAndAct('tests need DATABASE_URL', 'Edit…');
    await answerInput('tests need DATABASE_URL', edited);
    const project = await waitFor(async () => (read(projectStore).includes(`- ${edited}\n`) ? read(projectStore) : null), 'the edited note on disk');
    await closeReopenedBrowser();
    return { projectAfter: project };
  });

  report.move = await step('Browse notes: move a project note to global', async () => {
    await browseAndAct('use pnpm, not npm', 'Move to global');
    await waitFor(async () => read(globalStore).includes('- use pnpm, not npm\n') && !read(projectStore).includes('use pnpm'), 'the note moved on disk');
    await closeReopenedBrowser();
    return { projectAfter: read(projectStore), globalAfter: read(globalStore) };
  });

  report.merge = await step('Browse notes: merge two project notes', async () => {
    const first = '🎉 ship on fridays is fine';
    await browseAndAct(first, 'Merge with…');
    await waitFor(async () => (await page.textContent('.quick-input-widget .quick-input-title').catch(() => ''))?.includes('Merge'), 'the second-note picker');
    await pickRow(edited);
    await answerInput(`${first}; ${edited}`);
    const project = await waitFor(async () => (read(projectStore).includes(`- ${first}; ${edited}\n`) ? read(projectStore) : null), 'the merged note on disk');
    await closeReopenedBrowser();
    return { projectAfter: project };
  });
}

/** Click a button of the notification toast whose message contains `text`. */
async function clickNotificationButton(text, button, timeout = STEP_TIMEOUT) {
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
  await toast.waitFor({ state: 'visible', timeout });
  await toast.locator('.monaco-button', { hasText: button }).first().click();
}

/** Add a project note through "Memory: Add note…"; the project store's text afterwards. */
async function addProjectNote(text) {
  await runCommand('Memory: Add note…');
  await answerInput('', text);
  await pickRow('project');
}

/** The .vsix alone (no server configured or on PATH), in a workspace that starts untrusted. */
async function setupScenario() {
  await openWorkbench();
  report.offer = await step('accept the offer to set up the server', async () => {
    const message = 'memory-ls language server is not installed';
    await clickNotificationButton(message, 'Set Up Server', 60_000);
    return (await notifications()).join('\n');
  });
  // pip is first pointed at no index at all (PIP_CONFIG_FILE), so the install fails.
  report.failedInstall = await step('a failed install says what to do and opens the log', async () => {
    const failure = 'setting up the server failed';
    const message = await waitFor(
      async () => (await notifications()).find((text) => text.includes(failure)) ?? null,
      'the failure message',
      180_000,
    );
    await clickNotificationButton(failure, 'Open Log');
    const log = await waitFor(async () => {
      const text = await page
        .$$eval('.part.panel .monaco-editor .view-lines .view-line', (lines) =>
          lines.map((line) => (line.textContent ?? '').replace(/\u00a0/g, ' ')).join('\n'),
        )
        .catch(() => '');
      return text.includes('Setting up memory-ls failed') ? text : null;
    }, 'the Memory output log in the panel');
    return { message, log };
  });
  report.retry = await step('with pip fixed, Memory: Set up server installs it', async () => {
    writeFileSync(env('PIP_CONFIG_FILE'), '[global]\n');
    await runCommand('Notifications: Clear All Notifications');
    await runCommand('Memory: Set up server');
    return true;
  });
  await openMemoryFile();
  report.problems = await step('the private server publishes diagnostics', () => memoryProblems(400_000));
  await screenshot('vscode-setup');

  report.untrusted = await step('untrusted: adding a project note is refused', async () => {
    await runCommand('Notifications: Clear All Notifications');
    await addProjectNote('added before trust');
    const message = await waitFor(async () => (await notifications()).find((text) => text.startsWith('Memory:')) ?? null, 'the refusal');
    return { message, projectAfter: read(projectStore) };
  });

  report.trust = await step('grant workspace trust: the server restarts trusted', async () => {
    await runCommand('Notifications: Clear All Notifications');
    await runCommand('Workspaces: Manage Workspace Trust');
    const trust = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust/ }).first();
    await trust.waitFor({ state: 'visible' });
    await trust.click();
    const message = await waitFor(
      async () => (await notifications()).find((text) => text.includes('workspace is now trusted')) ?? null,
      'the restart notice',
    );
    await runCommand('View: Close Editor');
    return { message };
  });

  report.trusted = await step('trusted: adding a project note is written to disk', async () => {
    await addProjectNote('added after trust');
    const project = await waitFor(async () => (read(projectStore).includes('- added after trust\n') ? read(projectStore) : null), 'the note on disk');
    return { projectAfter: project };
  });

  report.upgraded = await step('an upgraded extension reinstalls its newer wheel', async () => {
    // Upgrade in place: the installed extension's wheel becomes the newer one, then reload.
    const extensions = env('EXTENSIONS_DIR');
    const folder = readdirSync(extensions).find((name) => name.startsWith('memory-ls.memory-ls-'));
    const server = join(extensions, folder, 'dist', 'server');
    for (const name of readdirSync(server)) rmSync(join(server, name));
    const wheel = env('UPGRADE_WHEEL');
    copyFileSync(wheel, join(server, wheel.split('/').pop()));
    await runCommand('Developer: Reload Window');
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
    await page.waitForTimeout(3000);
    await openMemoryFile();
    const problems = await memoryProblems(400_000);
    return { problems };
  });
}

await main();
writeFileSync(env('RESULT_FILE'), JSON.stringify(report, null, 2));
process.exit(report.failed ? 1 : 0);
