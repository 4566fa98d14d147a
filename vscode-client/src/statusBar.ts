// The status-bar item: notes per scope and the recall bytes used / cap, from memory.list + memory.inject.
import * as vscode from 'vscode';
import type { MemoryClient } from './client';
import { ServerCommand, isMemoryResult } from './protocol';
import { statusBarEnabled } from './settings';

export class MemoryStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly client: MemoryClient) {
    this.item = vscode.window.createStatusBarItem('memoryLs.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Memory';
    this.item.command = 'memoryLs.browse';
    this.item.text = '$(book) Memory';
    this.item.tooltip = 'Memory: starting the memory-ls server…';
    this.disposables.push(
      client.onDidChange(() => this.schedule()),
      vscode.workspace.onDidSaveTextDocument((document) => {
        if (isMemoryPath(document.uri)) {
          this.schedule();
        }
      }),
      vscode.languages.onDidChangeDiagnostics((event) => {
        if (event.uris.some(isMemoryPath)) {
          this.schedule();
        }
      }),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('memoryLs')) {
          this.schedule();
        }
      }),
    );
    const watcher = vscode.workspace.createFileSystemWatcher('**/.pi/{memory.md,bytefly.json}');
    this.disposables.push(watcher, watcher.onDidChange(() => this.schedule()), watcher.onDidCreate(() => this.schedule()), watcher.onDidDelete(() => this.schedule()));
    if (statusBarEnabled()) {
      this.item.show();
    }
  }

  /** Refresh soon, coalescing bursts of events. */
  schedule(delayMs = 250): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, delayMs);
  }

  async refresh(): Promise<void> {
    if (!statusBarEnabled()) {
      this.item.hide();
      return;
    }
    this.item.show();
    if (!this.client.running) {
      this.item.text = '$(book) Memory $(circle-slash)';
      this.item.tooltip = 'Memory: the memory-ls server is not running (Memory: Restart server).';
      return;
    }
    try {
      const [list, recall, paths] = await Promise.all([
        this.client.execute(ServerCommand.list),
        this.client.execute(ServerCommand.inject),
        this.client.execute(ServerCommand.path).catch(() => undefined),
      ]);
      if (!isMemoryResult(list)) {
        throw new Error('unexpected memory.list result');
      }
      const projectLabel = paths !== undefined && !paths.trusted ? 'project untrusted' : `${list.project.length} project`;
      const recallLabel = recall.inject ? `${recall.bytes}/${recall.maxInjectBytes} B` : 'recall off';
      this.item.text = `$(book) ${projectLabel}, ${list.global.length} global · ${recallLabel}`;
      const tooltip = new vscode.MarkdownString(undefined, true);
      tooltip.appendMarkdown(`**Memory** — ${list.project.length} project, ${list.global.length} global notes\n\n`);
      if (recall.inject) {
        tooltip.appendMarkdown(`Recall: ${recall.bytes} of ${recall.maxInjectBytes} bytes, ${recall.included} notes injected`);
        tooltip.appendMarkdown(recall.omitted.length > 0 ? `, **${recall.omitted.length} left out**\n\n` : '\n\n');
      } else {
        tooltip.appendMarkdown('Recall is off (`inject: false`): nothing reaches the model.\n\n');
      }
      if (paths !== undefined) {
        tooltip.appendMarkdown(`Project: \`${paths.project}\` (${paths.trustReason || (paths.trusted ? 'trusted' : 'untrusted')})\n\nGlobal: \`${paths.global}\`\n\n`);
      }
      tooltip.appendMarkdown('Click to browse the notes.');
      this.item.tooltip = tooltip;
      this.item.backgroundColor = list.error ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    } catch (error) {
      this.item.text = '$(book) Memory $(warning)';
      this.item.tooltip = `Memory: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
    this.item.dispose();
  }
}

function isMemoryPath(uri: vscode.Uri): boolean {
  return uri.path.endsWith('/.pi/memory.md') || uri.path.endsWith('/memory.md');
}
