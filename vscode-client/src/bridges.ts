// Bridges to other agents (SPEC §15): import their memory files, export ours to AGENTS.md & co.
// Both run on the server (`memory.import`, `memory.export`), so Neovim and every other client get them too.
import * as vscode from 'vscode';
import type { MemoryClient } from './client';
import { pickScope } from './notes';
import { type ImportResult, ServerCommand } from './protocol';
import type { ReportDocuments } from './reports';

const FORMATS = [
  { label: 'auto', description: 'pick by content' },
  { label: 'markdown', description: 'every bullet outside code fences (any notes file)' },
  { label: 'claude', description: "Claude Code's auto-memory MEMORY.md and its topic files" },
  { label: 'gemini', description: 'the bullets under "## Gemini Added Memories" in GEMINI.md' },
  { label: 'hermes', description: "Hermes Agent's MEMORY.md / USER.md (entries separated by §)" },
] as const;

/** *Memory: Import notes…*: a file picker, the format and scope, then a summary. */
export async function importNotes(client: MemoryClient, reports: ReportDocuments): Promise<void> {
  const files = await vscode.window.showOpenDialog({
    title: 'Memory: Import notes from other agents',
    canSelectMany: true,
    openLabel: 'Import',
    filters: { Markdown: ['md', 'markdown', 'txt'], 'All files': ['*'] },
  });
  const first = files?.[0];
  if (files === undefined || first === undefined) {
    return;
  }
  const format = await vscode.window.showQuickPick([...FORMATS], {
    title: 'Memory: Import format',
    placeHolder: 'How to read the files',
  });
  if (format === undefined) {
    return;
  }
  const scope = await pickScope('Import into which memory?');
  if (scope === undefined) {
    return;
  }
  const folder = vscode.workspace.getWorkspaceFolder(first) ?? vscode.workspace.workspaceFolders?.[0];
  const result = await client.execute(ServerCommand.import, {
    files: files.map((file) => file.toString()),
    format: format.label,
    scope,
    ...(folder ? { uri: folder.uri.toString() } : {}),
  });
  if (result.error) {
    void vscode.window.showErrorMessage(`Memory: ${result.error}`);
    return;
  }
  const summary = `Imported ${result.added.length}, skipped ${result.skipped.length}, refused ${result.refused.length}.`;
  const show = result.refused.length > 0 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const answer = await show(`Memory: ${summary}`, 'Show details');
  if (answer === 'Show details') {
    await reports.show('Memory import', renderImport(result, summary));
  }
}

export function renderImport(result: ImportResult, summary: string): string {
  const lines = ['# Memory import', '', summary, ''];
  const section = (title: string, items: string[]): void => {
    if (items.length > 0) {
      lines.push(`## ${title}`, '', ...items.map((item) => `- ${item}`), '');
    }
  };
  section('Added', result.added);
  section('Skipped (already stored or already imported)', result.skipped);
  section(
    'Refused',
    result.refused.map((item) => `${item.text} — ${item.error}`),
  );
  return `${lines.join('\n')}\n`;
}

/** *Memory: Export to AGENTS.md…*: pick the instruction file (AGENTS.md by default), then write its block. */
export async function exportToFile(client: MemoryClient): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const target = await vscode.window.showSaveDialog({
    title: 'Memory: Export the recall body to an instruction file',
    saveLabel: 'Export',
    ...(folder ? { defaultUri: vscode.Uri.joinPath(folder.uri, 'AGENTS.md') } : {}),
    filters: { Markdown: ['md'] },
  });
  if (target === undefined) {
    return;
  }
  const owner = vscode.workspace.getWorkspaceFolder(target) ?? folder;
  const result = await client.execute(ServerCommand.export, {
    to: target.toString(),
    ...(owner ? { uri: owner.uri.toString() } : {}),
  });
  if (result.error) {
    void vscode.window.showErrorMessage(`Memory: ${result.error}`);
    return;
  }
  const answer = await vscode.window.showInformationMessage(`Memory: ${result.message}`, 'Open');
  if (answer === 'Open') {
    await vscode.window.showTextDocument(target);
  }
}
