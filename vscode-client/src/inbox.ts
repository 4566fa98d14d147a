// The review inbox (SPEC §12): "Memory: Review inbox", the `N to review` status-bar item,
// and a notification when an agent proposes something. Every action is a server command.
import * as vscode from 'vscode';
import type { MemoryClient } from './client';
import { type InboxCounts, type Proposal, type ReviewResult, SCOPES, type Scope, ServerCommand } from './protocol';
import { statusBarEnabled } from './settings';

interface Waiting {
  scope: Scope;
  proposal: Proposal;
}

type Decision = 'accept' | 'edit' | 'reject';

interface ProposalItem extends vscode.QuickPickItem {
  waiting?: Waiting;
  all?: 'accept' | 'reject';
}

// What a reviewer cannot see for what it is: controls, format characters (bidi, zero-width,
// Unicode tags, …), line and paragraph separators. A copy of the server's `UNSEEN_RANGES`
// (memory_ls/core/text.py), which tests/editors/test_hidden_characters.py checks it against.
const UNSEEN =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u{110bd}\u{110cd}\u{13430}-\u{1343f}\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e007f}]/gu;
const NAMED_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `text` with hidden characters shown escaped (`\u202e`), so a reviewer sees what would be stored. */
export function escapeUnseen(text: string): string {
  return text.replace(UNSEEN, (char) => {
    const named = NAMED_ESCAPES[char];
    if (named !== undefined) {
      return named;
    }
    const code = char.codePointAt(0) ?? 0;
    if (code < 0x100) {
      return `\\x${code.toString(16).padStart(2, '0')}`;
    }
    if (code < 0x10000) {
      return `\\u${code.toString(16).padStart(4, '0')}`;
    }
    return `\\U${code.toString(16).padStart(8, '0')}`;
  });
}

/** `text`, or `text → to` for an update (hidden characters escaped). */
export function proposalLabel(proposal: Proposal): string {
  const text = escapeUnseen(proposal.text);
  return proposal.action === 'update' ? `${text} → ${escapeUnseen(proposal.to ?? '')}` : text;
}

/** `<by> proposes to remember: <text>` (to forget, for a forget). */
export function arrivalMessage(proposal: Proposal): string {
  const verb = proposal.action === 'forget' ? 'forget' : 'remember';
  return `${proposal.by} proposes to ${verb}: ${proposalLabel(proposal)}`;
}

async function waitingProposals(client: MemoryClient): Promise<Waiting[]> {
  const inbox = await client.execute(ServerCommand.inbox);
  return SCOPES.flatMap((scope) => inbox[scope].map((proposal) => ({ scope, proposal })));
}

function report(result: ReviewResult): void {
  if (result.error !== undefined) {
    void vscode.window.showWarningMessage(`Memory: ${result.text}`);
  } else {
    void vscode.window.setStatusBarMessage(`Memory: ${result.text.split('\n')[0]}`, 5000);
  }
}

/** Accept, edit then accept, or reject one proposal. */
export async function decide(client: MemoryClient, waiting: Waiting, decision: Decision): Promise<ReviewResult | undefined> {
  const { scope, proposal } = waiting;
  const argument: Record<string, unknown> = { id: proposal.id, scope };
  if (decision === 'reject') {
    const result = await client.execute(ServerCommand.reject, argument);
    report(result);
    return result;
  }
  if (decision === 'edit') {
    const field = proposal.action === 'update' ? 'to' : 'text';
    const value = await vscode.window.showInputBox({
      title: `Memory: edit, then accept (${scope})`,
      prompt: proposal.action === 'update' ? `New text for: ${escapeUnseen(proposal.text)}` : 'The note to remember',
      value: proposal.action === 'update' ? (proposal.to ?? '') : proposal.text,
    });
    if (value === undefined) {
      return undefined;
    }
    argument[field] = value;
  }
  const result = await client.execute(ServerCommand.accept, argument);
  report(result);
  return result;
}

/** "Memory: Review inbox": pick a proposal, then accept, edit and accept, or reject it; or all at once. */
export async function reviewInbox(client: MemoryClient): Promise<void> {
  for (;;) {
    const waiting = await waitingProposals(client);
    if (waiting.length === 0) {
      void vscode.window.showInformationMessage('Memory: no proposals are waiting for review.');
      return;
    }
    const items: ProposalItem[] = waiting.map((w) => ({
      label: `${w.proposal.action}: ${proposalLabel(w.proposal)}`,
      description: `${w.scope === 'project' ? '$(folder)' : '$(globe)'} ${w.scope}`,
      detail: `by ${w.proposal.by} · ${w.proposal.at} · ${w.proposal.id}`,
      waiting: w,
    }));
    items.push(
      { label: '', kind: vscode.QuickPickItemKind.Separator },
      { label: '$(check-all) Accept all', all: 'accept' },
      { label: '$(close-all) Reject all', all: 'reject' },
    );
    const chosen = await vscode.window.showQuickPick(items, {
      title: `Memory: Review inbox (${waiting.length} waiting)`,
      placeHolder: 'Pick a proposal to accept, edit or reject',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (chosen === undefined) {
      return;
    }
    if (chosen.all !== undefined) {
      const command = chosen.all === 'accept' ? ServerCommand.accept : ServerCommand.reject;
      report(await client.execute(command, { all: true }));
      continue;
    }
    if (chosen.waiting === undefined) {
      continue;
    }
    const decisions: (vscode.QuickPickItem & { decision: Decision })[] = [
      { decision: 'accept', label: '$(check) Accept', description: 'run the change now' },
      ...(chosen.waiting.proposal.action === 'forget'
        ? []
        : [{ decision: 'edit' as const, label: '$(edit) Edit and accept…', description: 'change the text first' }]),
      { decision: 'reject', label: '$(close) Reject', description: 'drop the proposal' },
    ];
    const decision = await vscode.window.showQuickPick(decisions, {
      title: arrivalMessage(chosen.waiting.proposal),
      placeHolder: 'Accept, edit or reject?',
    });
    if (decision !== undefined) {
      await decide(client, chosen.waiting, decision.decision);
    }
  }
}

/** The `N to review` status-bar item, and a notification for each proposal that arrives. */
export class InboxStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private seen: Set<string> | undefined;
  /** Updates run one after another, so a proposal is announced once. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly client: MemoryClient) {
    this.item = vscode.window.createStatusBarItem('memoryLs.inbox', vscode.StatusBarAlignment.Right, 99);
    this.item.name = 'Memory inbox';
    this.item.command = 'memoryLs.reviewInbox';
    this.disposables.push(
      client.onInbox((counts) => this.enqueue(() => this.update(counts))),
      client.onDidChange(() => this.enqueue(() => this.refresh())),
    );
  }

  private enqueue(run: () => Promise<void>): void {
    this.queue = this.queue.then(run).catch(() => undefined);
  }

  /** Ask the server for the counts (after a start or a command). */
  private async refresh(): Promise<void> {
    if (!this.client.running) {
      return;
    }
    const waiting = await waitingProposals(this.client);
    const counts: InboxCounts = { project: 0, global: 0 };
    for (const w of waiting) {
      counts[w.scope] += 1;
    }
    await this.update(counts, waiting);
  }

  private async update(counts: InboxCounts, known?: Waiting[]): Promise<void> {
    const total = counts.project + counts.global;
    if (total === 0 || !statusBarEnabled()) {
      this.item.hide();
    } else {
      this.item.text = `$(inbox) ${total} to review`;
      this.item.tooltip = `Memory: ${counts.project} project, ${counts.global} global proposals wait for review (click to review).`;
      this.item.show();
    }
    const waiting = known ?? (total > 0 ? await waitingProposals(this.client) : []);
    const first = this.seen === undefined;
    const arrived = waiting.filter((w) => !(this.seen?.has(w.proposal.id) ?? false));
    this.seen = new Set(waiting.map((w) => w.proposal.id));
    if (first) {
      return; // what waited before the window opened is counted, not announced
    }
    for (const w of arrived) {
      void this.announce(w);
    }
  }

  private async announce(waiting: Waiting): Promise<void> {
    const answer = await vscode.window.showInformationMessage(arrivalMessage(waiting.proposal), 'Accept', 'Reject', 'Review');
    if (answer === 'Accept') {
      await decide(this.client, waiting, 'accept');
    } else if (answer === 'Reject') {
      await decide(this.client, waiting, 'reject');
    } else if (answer === 'Review') {
      await vscode.commands.executeCommand('memoryLs.reviewInbox');
    }
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
    this.item.dispose();
  }
}
