// memory-ls for VS Code: the language client, the palette commands, the note browser and the status bar.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { browseNotes, pickAndForget } from './browse';
import { MemoryClient } from './client';
import { exportToFile, importNotes } from './bridges';
import { InboxStatus, reviewInbox } from './inbox';
import { addNote, clearScope } from './notes';
import { type InjectResult, type ReloadResult, SCOPES, ServerCommand, type SyncResult } from './protocol';
import { REPORT_SCHEME, ReportDocuments } from './reports';
import { ServerSetup } from './serverSetup';
import { RESTART_KEYS, SECTION } from './settings';
import { MemoryStatusBar } from './statusBar';

let memoryClient: MemoryClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Memory');
  const setup = new ServerSetup(context, output);
  const client = new MemoryClient(output, () => setup.launch());
  memoryClient = client;
  const reports = new ReportDocuments();
  const statusBar = new MemoryStatusBar(client);
  const inboxStatus = new InboxStatus(client);
  context.subscriptions.push(
    output,
    client,
    reports,
    statusBar,
    inboxStatus,
    vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports),
  );

  const command = (id: string, run: () => Promise<unknown>): void => {
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async () => {
        try {
          await run();
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          output.appendLine(`${id} failed: ${message}`);
          void vscode.window.showErrorMessage(`Memory: ${message}`);
        } finally {
          statusBar.schedule();
        }
      }),
    );
  };

  command('memoryLs.browse', () => browseNotes(client));
  command('memoryLs.addNote', () => addNote(client));
  command('memoryLs.forgetNote', () => pickAndForget(client));
  command('memoryLs.showDoctor', async () => {
    const doctor = await client.execute(ServerCommand.doctor);
    await reports.show('Memory doctor', `# Memory doctor\n\n\`\`\`\`text\n${doctor.text}\n\`\`\`\`\n`);
  });
  command('memoryLs.showRecall', async () => {
    const recall = await client.execute(ServerCommand.inject);
    await reports.show('Memory recall preview', renderRecall(recall));
  });
  command('memoryLs.openProject', async () => openStore(client, 'project'));
  command('memoryLs.openGlobal', async () => openStore(client, 'global'));
  command('memoryLs.reload', async () => {
    const result = await client.execute(ServerCommand.reload);
    void vscode.window.showInformationMessage(`Memory: ${describeReload(result)}`);
  });
  command('memoryLs.clear', () => clearScope(client));
  command('memoryLs.syncGlobal', () => syncGlobal(client, output));
  command('memoryLs.importNotes', () => importNotes(client, reports));
  command('memoryLs.exportAgents', () => exportToFile(client));
  command('memoryLs.reviewInbox', () => reviewInbox(client));
  command('memoryLs.setupServer', async () => {
    if (await setup.setUpFromCommand()) {
      await client.restart();
    }
  });
  command('memoryLs.restart', async () => {
    await client.restart();
    void vscode.window.showInformationMessage('Memory: the memory-ls server was restarted.');
  });

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
        output.appendLine('Server settings changed: restarting memory-ls.');
        await client.restart().catch((error: unknown) => {
          output.appendLine(`Restarting memory-ls failed: ${error instanceof Error ? error.message : String(error)}`);
        });
      }
    }),
    // Trust changes what the server may read and write: start it again with `trusted: true`.
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      output.appendLine('Workspace trust granted: restarting memory-ls with trusted: true.');
      await client.restart().catch(() => undefined);
      void vscode.window.showInformationMessage('Memory: the workspace is now trusted, so project memory is recalled and editable.');
    }),
  );

  // Not awaited: without a server, starting waits for the user's answer to the setup offer.
  void client
    .start()
    .catch((error: unknown) => {
      output.appendLine(`memory-ls did not start: ${error instanceof Error ? error.message : String(error)}`);
    })
    .finally(() => statusBar.schedule(0));
}

export async function deactivate(): Promise<void> {
  await memoryClient?.stop();
  memoryClient = undefined;
}

async function openStore(client: MemoryClient, scope: 'project' | 'global'): Promise<void> {
  const paths = await client.execute(ServerCommand.path);
  const file = scope === 'project' ? paths.project : paths.global;
  if (scope === 'project' && !paths.trusted) {
    void vscode.window.showWarningMessage(
      `Memory: this project is ${paths.trustReason}: its notes are not recalled and the tool will not change them.`,
    );
  }
  const uri = vscode.Uri.file(file);
  // A store that does not exist yet opens as an untitled document that saves to its path.
  const target = fs.existsSync(file) ? uri : uri.with({ scheme: 'untitled' });
  const document = await vscode.workspace.openTextDocument(target);
  await vscode.window.showTextDocument(document);
}

/**
 * *Memory: Sync global store*: `memory.sync` under a progress notification. The server shows the
 * summary (notes arrived and left, or what went wrong and what to do) itself, with
 * `window/showMessage`; the output channel keeps the notes that moved.
 */
async function syncGlobal(client: MemoryClient, output: vscode.OutputChannel): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Memory: syncing the global store with git…' },
    () => client.execute(ServerCommand.sync, { scope: 'global' }),
  );
  output.appendLine(describeSync(result));
}

function describeSync(result: SyncResult): string {
  const lines = [`memory.sync (${result.scope}) in ${result.repository || '(no repository)'}:`];
  lines.push(...result.setup);
  if (result.commit !== undefined) {
    lines.push(`committed: ${result.commit}`);
  }
  lines.push(...result.arrived.map((note) => `+ ${note}`), ...result.left.map((note) => `- ${note}`));
  lines.push(result.error !== undefined ? `error: ${result.error}` : `pushed to ${result.upstream}`);
  return lines.join('\n');
}

function renderRecall(recall: InjectResult): string {
  const lines = ['# Memory recall preview', ''];
  if (!recall.inject) {
    lines.push('Recall is off (`inject: false` in bytefly.json): nothing is injected.');
    return `${lines.join('\n')}\n`;
  }
  lines.push(
    `${recall.bytes} of ${recall.maxInjectBytes} bytes · ${recall.included} notes injected · ${recall.omitted.length} left out`,
    '',
  );
  if (recall.body === null) {
    lines.push('There are no notes to inject.');
  } else {
    const fence = '`'.repeat(Math.max(4, longestBacktickRun(recall.body) + 1));
    lines.push(`${fence}text`, recall.body, fence);
  }
  if (recall.omitted.length > 0) {
    lines.push('', '## Left out (over the byte cap)', '');
    for (const note of recall.omitted) {
      lines.push(`- (${note.scope}) ${note.text}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** `reloaded both stores: project +1 −0.` from what `memory.reload` found changed in each store. */
function describeReload(result: ReloadResult): string {
  const parts: string[] = [];
  for (const scope of SCOPES) {
    const { added, removed } = result.reloaded[scope];
    if (added.length > 0 || removed.length > 0) {
      parts.push(`${scope} +${added.length} −${removed.length}`);
    }
  }
  if (parts.length === 0) {
    return 'reloaded both stores: nothing changed on disk.';
  }
  return `reloaded both stores: ${parts.join(', ')}.`;
}

function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const match of text.matchAll(/`+/g)) {
    longest = Math.max(longest, match[0].length);
  }
  return longest;
}
