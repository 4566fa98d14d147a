// The memory-ls server's `memory.*` commands and what each returns (SPEC §3, §7, §9).
// Every shape is generated from the server's published JSON Schemas (src/generated/schemas.ts,
// `make schemas`): none is written by hand here, so the client cannot drift from the server.
import type {
  DoctorResult,
  ExportResult,
  ImportResult,
  InboxResult,
  InjectResult,
  MemoryResult,
  PathInfo,
  ReloadResult,
  RevealResult,
  SyncResult,
  ReviewResult,
} from './generated/schemas';

export type {
  DoctorResult,
  ExportResult,
  ImportRefusal,
  ImportResult,
  InboxCounts,
  InboxResult,
  Proposal,
  ReviewResult,
  InjectResult,
  MemoryResult,
  NoteChanges,
  OmittedNote,
  PathInfo,
  ReloadResult,
  RevealResult,
  Settings as ServerSettings,
  SyncResult,
} from './generated/schemas';

export type Scope = MemoryResult['scope'];

export const SCOPES: readonly Scope[] = ['project', 'global'];

export function otherScope(scope: Scope): Scope {
  return scope === 'project' ? 'global' : 'project';
}

/** The server-side command ids. They are registered by the language client; never register them here. */
export const ServerCommand = {
  add: 'memory.add',
  update: 'memory.update',
  forget: 'memory.forget',
  list: 'memory.list',
  merge: 'memory.merge',
  move: 'memory.move',
  clear: 'memory.clear',
  path: 'memory.path',
  reload: 'memory.reload',
  doctor: 'memory.doctor',
  inject: 'memory.inject',
  sync: 'memory.sync',
  import: 'memory.import',
  export: 'memory.export',
  propose: 'memory.propose',
  inbox: 'memory.inbox',
  accept: 'memory.accept',
  reject: 'memory.reject',
  reveal: 'memory.reveal',
} as const;

export type ServerCommandId = (typeof ServerCommand)[keyof typeof ServerCommand];

/** What each command returns: `MemoryClient.execute` is typed by it, so no caller picks a type. */
export interface CommandResults {
  'memory.add': MemoryResult;
  'memory.update': MemoryResult;
  'memory.forget': MemoryResult;
  'memory.list': MemoryResult;
  'memory.merge': MemoryResult;
  'memory.move': MemoryResult;
  'memory.clear': MemoryResult;
  'memory.path': PathInfo;
  'memory.reload': ReloadResult;
  'memory.doctor': DoctorResult;
  'memory.inject': InjectResult;
  'memory.sync': SyncResult;
  'memory.import': ImportResult;
  'memory.export': ExportResult;
  'memory.propose': MemoryResult;
  'memory.inbox': InboxResult;
  'memory.accept': ReviewResult;
  'memory.reject': ReviewResult;
  /** What a `stale-path` / `stale-script` quick fix *Edit the note* runs (the language client runs it). */
  'memory.reveal': RevealResult;
}

/** The server's `memory/inbox` notification: how many proposals wait in each inbox (SPEC §12). */
export const INBOX_NOTIFICATION = 'memory/inbox';

export function isMemoryResult(value: unknown): value is MemoryResult {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as MemoryResult).project) &&
    Array.isArray((value as MemoryResult).global)
  );
}
