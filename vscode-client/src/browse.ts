// "Memory: Browse notes": a quick pick over both scopes with scope tags, a scope filter,
// a count summary, and edit / forget / move / merge on each note (item buttons or a follow-up menu).
import * as vscode from 'vscode';
import type { MemoryClient } from './client';
import { type Note, editNote, forgetNote, listNotes, mergeNote, moveNote, summary } from './notes';
import { type MemoryResult, type Scope, otherScope } from './protocol';

type Filter = Scope | 'all';
type Action = 'edit' | 'forget' | 'move' | 'merge';

interface NoteItem extends vscode.QuickPickItem {
  note: Note;
}

interface ActionButton extends vscode.QuickInputButton {
  action: Action;
}

interface FilterButton extends vscode.QuickInputButton {
  filter: Filter;
}

const ACTION_BUTTONS: readonly ActionButton[] = [
  { action: 'edit', iconPath: new vscode.ThemeIcon('edit'), tooltip: 'Edit note' },
  { action: 'move', iconPath: new vscode.ThemeIcon('arrow-swap'), tooltip: 'Move to the other scope' },
  { action: 'merge', iconPath: new vscode.ThemeIcon('git-merge'), tooltip: 'Merge with another note' },
  { action: 'forget', iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Forget note' },
];

const FILTER_BUTTONS: readonly FilterButton[] = [
  { filter: 'all', iconPath: new vscode.ThemeIcon('list-flat'), tooltip: 'Show all notes' },
  { filter: 'project', iconPath: new vscode.ThemeIcon('folder'), tooltip: 'Show project notes only' },
  { filter: 'global', iconPath: new vscode.ThemeIcon('globe'), tooltip: 'Show global notes only' },
];

function scopeTag(scope: Scope): string {
  return scope === 'project' ? '$(folder) project' : '$(globe) global';
}

export async function browseNotes(client: MemoryClient, initialFilter: Filter = 'all'): Promise<void> {
  let filter = initialFilter;
  for (;;) {
    const { result, notes } = await listNotes(client);
    const choice = await pickNote(result, notes, filter);
    if (choice === undefined) {
      return;
    }
    filter = choice.filter;
    const action = choice.action ?? (await pickAction(choice.note));
    if (action === undefined) {
      continue;
    }
    try {
      await runAction(client, action, choice.note, notes);
    } catch (error) {
      void vscode.window.showErrorMessage(`Memory: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

interface Choice {
  note: Note;
  action: Action | undefined;
  filter: Filter;
}

function pickNote(result: MemoryResult, notes: readonly Note[], initialFilter: Filter): Promise<Choice | undefined> {
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<NoteItem>();
    let filter = initialFilter;
    let settled = false;
    const finish = (choice: Choice | undefined): void => {
      if (!settled) {
        settled = true;
        resolve(choice);
        pick.hide();
      }
    };
    const render = (): void => {
      const shown = notes.filter((note) => filter === 'all' || note.scope === filter);
      pick.title = `Memory: ${summary(result, filter)}`;
      pick.placeholder =
        shown.length === 0
          ? `No ${filter === 'all' ? '' : `${filter} `}notes. Use "Memory: Add note…" to save one.`
          : 'Pick a note to edit, forget, move or merge (type to filter; "project" or "global" filters by scope)';
      pick.buttons = FILTER_BUTTONS.filter((button) => button.filter !== filter);
      pick.items = shown.map((note) => ({
        label: note.text,
        description: scopeTag(note.scope),
        buttons: [...ACTION_BUTTONS],
        note,
      }));
    };
    pick.matchOnDescription = true;
    pick.ignoreFocusOut = false;
    render();
    pick.onDidTriggerButton((button) => {
      filter = (button as FilterButton).filter;
      render();
    });
    pick.onDidTriggerItemButton((event) => {
      finish({ note: event.item.note, action: (event.button as ActionButton).action, filter });
    });
    pick.onDidAccept(() => {
      const item = pick.selectedItems[0];
      if (item !== undefined) {
        finish({ note: item.note, action: undefined, filter });
      }
    });
    pick.onDidHide(() => {
      finish(undefined);
      pick.dispose();
    });
    pick.show();
  });
}

async function pickAction(note: Note): Promise<Action | undefined> {
  const items: (vscode.QuickPickItem & { action: Action })[] = [
    { action: 'edit', label: '$(edit) Edit…', description: 'reword this note' },
    { action: 'forget', label: '$(trash) Forget…', description: 'remove it (asks first)' },
    { action: 'move', label: `$(arrow-swap) Move to ${otherScope(note.scope)}`, description: `from ${note.scope} memory` },
    { action: 'merge', label: '$(git-merge) Merge with…', description: 'combine with another note of this scope' },
  ];
  const chosen = await vscode.window.showQuickPick(items, { title: `Memory (${note.scope}): ${note.text}`, placeHolder: 'What to do with this note?' });
  return chosen?.action;
}

async function runAction(client: MemoryClient, action: Action, note: Note, notes: readonly Note[]): Promise<void> {
  switch (action) {
    case 'edit':
      await editNote(client, note);
      return;
    case 'forget':
      await forgetNote(client, note);
      return;
    case 'move':
      await moveNote(client, note);
      return;
    case 'merge':
      await mergeNote(client, note, notes);
      return;
  }
}

/** "Memory: Forget note…": pick one note of either scope, confirm, forget it. */
export async function pickAndForget(client: MemoryClient): Promise<void> {
  const { result, notes } = await listNotes(client);
  if (notes.length === 0) {
    void vscode.window.showInformationMessage('Memory: there are no notes to forget.');
    return;
  }
  const chosen = await vscode.window.showQuickPick(
    notes.map((note) => ({ label: note.text, description: scopeTag(note.scope), note })),
    { title: `Memory: Forget note (${summary(result)})`, placeHolder: 'The note to forget', matchOnDescription: true },
  );
  if (chosen !== undefined) {
    await forgetNote(client, chosen.note);
  }
}
