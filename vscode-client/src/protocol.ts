// Shapes of the memory-ls server's `memory.*` command results (SPEC §3, §7, §9).
// The server is the source of truth; these types only describe what the client reads.

export type Scope = 'project' | 'global';

export const SCOPES: readonly Scope[] = ['project', 'global'];

export function otherScope(scope: Scope): Scope {
  return scope === 'project' ? 'global' : 'project';
}

export interface MemoryResult {
  action: string;
  scope: Scope;
  project: string[];
  global: string[];
  changed: boolean;
  entry?: string | null;
  to?: string | null;
  existing?: string | null;
  error?: string | null;
}

export interface OmittedNote {
  scope: Scope;
  text: string;
}

export interface InjectResult {
  body: string | null;
  bytes: number;
  maxInjectBytes: number;
  included: number;
  omitted: OmittedNote[];
  inject: boolean;
}

export interface PathResult {
  project: string;
  global: string;
  trusted: boolean;
  trustReason?: string;
}

/** The doctor report (SPEC §9) with its text rendering in `text`. */
export interface DoctorResult {
  text: string;
  [key: string]: unknown;
}

export interface StoreChange {
  added: string[];
  removed: string[];
}

/** `memory.reload`: whether anything changed, and per scope the notes added and removed. */
export interface ReloadResult {
  changed: boolean;
  project?: StoreChange;
  global?: StoreChange;
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
} as const;

export type ServerCommandId = (typeof ServerCommand)[keyof typeof ServerCommand];

export function isMemoryResult(value: unknown): value is MemoryResult {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as MemoryResult).project) &&
    Array.isArray((value as MemoryResult).global)
  );
}
