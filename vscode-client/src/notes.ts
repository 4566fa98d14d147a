// The note actions (add, edit, forget, move, merge, clear) shared by the palette commands and the browser.
import * as vscode from 'vscode';
import type { MemoryClient } from './client';
import { type MemoryResult, type Scope, SCOPES, ServerCommand, isMemoryResult, otherScope } from './protocol';

export interface Note {
  scope: Scope;
  text: string;
}

export async function listNotes(client: MemoryClient): Promise<{ result: MemoryResult; notes: Note[] }> {
  const result = await client.execute(ServerCommand.list);
  if (!isMemoryResult(result)) {
    throw new Error('memory.list returned an unexpected result.');
  }
  const notes: Note[] = [
    ...result.project.map((text): Note => ({ scope: 'project', text })),
    ...result.global.map((text): Note => ({ scope: 'global', text })),
  ];
  return { result, notes };
}

export function summary(result: Pick<MemoryResult, 'project' | 'global'>, filter: Scope | 'all' = 'all'): string {
  const label = filter === 'all' ? 'All' : filter === 'project' ? 'Project' : 'Global';
  return `${label} · ${result.project.length} project, ${result.global.length} global`;
}

/** Show what a mutation did; returns true when it went through. */
export function report(result: MemoryResult, done: string): boolean {
  if (result.error) {
    void vscode.window.showErrorMessage(`Memory: ${result.error}`);
    return false;
  }
  if (result.existing) {
    void vscode.window.showInformationMessage(`Already in ${result.action === 'move' ? otherScope(result.scope) : result.scope} memory: ${result.existing}`);
    return result.changed;
  }
  void vscode.window.showInformationMessage(
    `${done} Now ${result.project.length} project, ${result.global.length} global.`,
  );
  return true;
}

export async function pickScope(placeHolder: string, preferred: Scope = 'project'): Promise<Scope | undefined> {
  const items = [preferred, otherScope(preferred)].map((scope) => ({
    label: scope,
    description: scope === 'project' ? 'this repository: <root>/.pi/memory.md' : 'every project: <agent dir>/memory.md',
    scope,
  }));
  const chosen = await vscode.window.showQuickPick(items, { placeHolder, title: 'Memory scope' });
  return chosen?.scope;
}

export async function addNote(client: MemoryClient, presetText?: string): Promise<boolean> {
  const text = await vscode.window.showInputBox({
    title: 'Memory: Add note',
    prompt: 'One durable fact, recalled automatically in later sessions (at most 500 characters).',
    placeHolder: 'e.g. use pnpm, not npm',
    value: presetText ?? '',
    validateInput: (value) =>
      value.trim() === '' ? 'text is required.' : value.trim().length > 500 ? 'text is longer than 500 characters.' : undefined,
  });
  if (text === undefined) {
    return false;
  }
  const scope = await pickScope('Save the note in which scope?');
  if (scope === undefined) {
    return false;
  }
  const result = await client.execute(ServerCommand.add, { text, scope });
  return report(result, `Added to ${scope} memory: ${text.trim()}.`);
}

export async function editNote(client: MemoryClient, note: Note): Promise<boolean> {
  const to = await vscode.window.showInputBox({
    title: `Memory: Edit ${note.scope} note`,
    value: note.text,
    prompt: 'The new wording of the note.',
    validateInput: (value) => (value.trim() === '' ? 'to is required.' : undefined),
  });
  if (to === undefined || to === note.text) {
    return false;
  }
  const result = await client.execute(ServerCommand.update, { text: note.text, to, scope: note.scope });
  return report(result, `Updated ${note.scope} memory: ${to.trim()}.`);
}

export async function forgetNote(client: MemoryClient, note: Note): Promise<boolean> {
  const answer = await vscode.window.showWarningMessage(
    `Forget this ${note.scope} note?`,
    { modal: true, detail: note.text },
    'Forget',
  );
  if (answer !== 'Forget') {
    return false;
  }
  const result = await client.execute(ServerCommand.forget, { text: note.text, scope: note.scope });
  return report(result, `Removed from ${note.scope} memory: ${note.text}.`);
}

export async function moveNote(client: MemoryClient, note: Note): Promise<boolean> {
  const result = await client.execute(ServerCommand.move, { text: note.text, scope: note.scope });
  return report(result, `Moved to ${otherScope(note.scope)} memory: ${note.text}.`);
}

export async function mergeNote(client: MemoryClient, first: Note, candidates: readonly Note[]): Promise<boolean> {
  const others = candidates.filter((note) => note.scope === first.scope && note.text !== first.text);
  if (others.length === 0) {
    void vscode.window.showInformationMessage(`Memory: no other ${first.scope} note to merge with.`);
    return false;
  }
  const second = await vscode.window.showQuickPick(
    others.map((note) => ({ label: note.text, note })),
    { title: `Memory: Merge "${first.text}" with…`, placeHolder: 'The second note (it is removed)', matchOnDescription: true },
  );
  if (second === undefined) {
    return false;
  }
  const to = await vscode.window.showInputBox({
    title: 'Memory: Merged note',
    prompt: 'Reword the merged note; the first note is replaced by it and the second is removed.',
    value: `${first.text}; ${second.note.text}`,
    validateInput: (value) => (value.trim() === '' ? 'to is required.' : undefined),
  });
  if (to === undefined) {
    return false;
  }
  const result = await client.execute(ServerCommand.merge, {
    text: first.text,
    other: second.note.text,
    to,
    scope: first.scope,
  });
  return report(result, `Merged into ${first.scope} memory: ${to.trim()}.`);
}

export async function clearScope(client: MemoryClient): Promise<boolean> {
  const scope = await pickScope('Clear every note of which scope? (the server asks you to confirm)');
  if (scope === undefined) {
    return false;
  }
  const result = await client.execute(ServerCommand.clear, { scope });
  if (result.error) {
    void vscode.window.showErrorMessage(`Memory: ${result.error}`);
    return false;
  }
  if (result.changed) {
    void vscode.window.showInformationMessage(`Cleared ${scope} memory.`);
  }
  return result.changed;
}

export { SCOPES };
