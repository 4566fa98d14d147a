// GENERATED from schemas/*.schema.json by vscode-client/scripts/generate-types.mjs: do not edit.
// The schemas come from the server's models (memory_ls/core/models.py, memory_ls/server/settings_model.py);
// regenerate both with `make schemas`.

/**
 * Every shape the server publishes, by its file name in schemas/.
 */
export interface ServerShapes {
  'doctor-report': DoctorReport;
  'doctor-result': DoctorResult;
  'export-result': ExportResult;
  'import-result': ImportResult;
  'inbox-counts': InboxCounts;
  'inbox-result': InboxResult;
  'inject-result': InjectResult;
  'memory-result': MemoryResult;
  'path-info': PathInfo;
  'reload-result': ReloadResult;
  'reveal-result': RevealResult;
  'review-result': ReviewResult;
  settings: Settings;
  'sync-result': SyncResult;
}
/**
 * The doctor's report (``memory-ls doctor --json``), also the source of its text.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "DoctorReport".
 */
export interface DoctorReport {
  project: ScopeReport;
  global: ScopeReport;
  crossScopeDuplicates: CrossScopePair[];
  trust: TrustReport;
  config: ConfigReport;
  recall: RecallReport;
  problems: string[];
}
/**
 * What the doctor found in one store.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ScopeReport".
 */
export interface ScopeReport {
  path: string;
  exists: boolean;
  bytes: number;
  cap: number;
  notes: number;
  blankBullets: number;
  tooLong: string[];
  controlCharacters: string[];
  hiddenUnicode: string[];
  duplicates: DuplicatePair[];
  staleAndConflicts: ReviewFinding[];
  error?: string;
  readOnlyReason?: string;
  fileType?: 'directory' | 'fifo' | 'socket' | 'character-device' | 'block-device' | 'symlink' | 'other';
  refused?: string;
}
/**
 * Two notes with the same near-duplicate key.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "DuplicatePair".
 */
export interface DuplicatePair {
  first: string;
  second: string;
  firstLine: number;
  secondLine: number;
}
/**
 * One of SPEC §13's findings on a store (``stale-path``, ``stale-script``,
 * ``instruction-duplicate``, ``conflict``), as the doctor reports it.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ReviewFinding".
 */
export interface ReviewFinding {
  line: number;
  code: string;
  severity: string;
  message: string;
}
/**
 * A note held by both stores.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "CrossScopePair".
 */
export interface CrossScopePair {
  project: string;
  global: string;
}
/**
 * The trust decision and the rule that made it.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "TrustReport".
 */
export interface TrustReport {
  trusted: boolean;
  rule: 'explicit' | 'trust.json' | 'resources';
  reason: string;
  problems: string[];
}
/**
 * The effective configuration and where it came from.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ConfigReport".
 */
export interface ConfigReport {
  inject: boolean;
  maxInjectBytes: number;
  sources: ConfigSourceReport[];
  problems: string[];
}
/**
 * One configuration file and what became of it.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ConfigSourceReport".
 */
export interface ConfigSourceReport {
  path: string;
  status: 'used' | 'missing' | 'ignored' | 'skipped-untrusted';
  why: string | null;
}
/**
 * The recall plan's verdict.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "RecallReport".
 */
export interface RecallReport {
  inject: boolean;
  used: number;
  maxInjectBytes: number;
  included: number;
  omitted: OmittedNote[];
}
/**
 * A note the recall plan leaves out.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "OmittedNote".
 */
export interface OmittedNote {
  scope: 'project' | 'global';
  text: string;
}
/**
 * The ``memory.doctor`` result: the report plus its text rendering.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "DoctorResult".
 */
export interface DoctorResult {
  project: ScopeReport;
  global: ScopeReport;
  crossScopeDuplicates: CrossScopePair[];
  trust: TrustReport;
  config: ConfigReport;
  recall: RecallReport;
  problems: string[];
  text: string;
}
/**
 * The result of ``memory.export`` (and ``memory-ls export --json``).
 *
 * ``status``: ``current`` (nothing written), ``created`` (the file was
 * missing), ``added`` (the block was missing), ``stale`` (an older recall
 * body was replaced), ``edited`` (a block edited by hand was replaced).
 * ``changed`` says whether the file was (or, with ``check``, would be)
 * written; ``error`` why nothing could be written.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ExportResult".
 */
export interface ExportResult {
  path: string;
  status: 'current' | 'created' | 'added' | 'stale' | 'edited';
  changed: boolean;
  message: string;
  error?: string;
}
/**
 * The result of ``memory-ls import`` / ``memory.import``: each note under its verdict.
 *
 * ``added``: written to the store; ``skipped``: its near-duplicate key was
 * already stored or already imported; ``refused``: not written, with the
 * reason (an import that would pass the size cap, or that the scope refuses,
 * refuses every note it would have added). ``error`` is set only when the
 * import could not start (nothing was read, so nothing is listed).
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ImportResult".
 */
export interface ImportResult {
  added: string[];
  skipped: string[];
  refused: ImportRefusal[];
  error?: string;
}
/**
 * A note an import refused, and why (over-long, or the whole import was refused).
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ImportRefusal".
 */
export interface ImportRefusal {
  text: string;
  error: string;
}
/**
 * How many proposals wait in each inbox (also the ``memory/inbox`` notification).
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "InboxCounts".
 */
export interface InboxCounts {
  project: number;
  global: number;
}
/**
 * The ``memory.inbox`` object (``memory-ls inbox --json``): the waiting proposals of both scopes, in file order. An untrusted project's are counted, their text withheld.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "InboxResult".
 */
export interface InboxResult {
  project: Proposal[];
  global: Proposal[];
}
/**
 * One waiting proposal, as stored on a line of an inbox file (SPEC §12).
 *
 * ``id`` is 8 lowercase hex characters, unique in its inbox; ``by`` says who
 * proposed it; ``at`` is UTC, ``YYYY-MM-DDTHH:MM:SSZ``. ``to`` only for an update.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "Proposal".
 */
export interface Proposal {
  id: string;
  action: 'add' | 'update' | 'forget';
  text: string;
  to?: string;
  by: string;
  at: string;
}
/**
 * The ``memory.inject`` object: the recall body and its budget.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "InjectResult".
 */
export interface InjectResult {
  body: string | null;
  bytes: number;
  maxInjectBytes: number;
  included: number;
  omitted: OmittedNote[];
  inject: boolean;
}
/**
 * The result of every memory action: the notes of both scopes after it, whether the store changed, and the error that refused it, if any. With review (SPEC §12), ``proposal`` is the proposal queued, accepted or rejected, and ``waiting`` the number of proposals now in that scope's inbox.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "MemoryResult".
 */
export interface MemoryResult {
  action: string;
  scope: 'project' | 'global';
  project: string[];
  global: string[];
  changed: boolean;
  entry?: string;
  to?: string;
  existing?: string;
  error?: string;
  proposal?: Proposal;
  waiting?: number;
}
/**
 * The ``memory.path`` object: both store paths and the trust decision.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "PathInfo".
 */
export interface PathInfo {
  project: string;
  global: string;
  trusted: boolean;
  trustReason: string;
}
/**
 * The ``memory.reload`` result: both stores' notes as now read, and what changed.
 *
 * ``changed`` says whether either store's notes differ from the previous read;
 * ``reloaded`` gives the notes each store gained and lost.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ReloadResult".
 */
export interface ReloadResult {
  action: string;
  scope: 'project' | 'global';
  project: string[];
  global: string[];
  changed: boolean;
  entry?: string;
  to?: string;
  existing?: string;
  error?: string;
  proposal?: Proposal;
  waiting?: number;
  reloaded: ReloadChanges;
}
/**
 * What ``memory.reload`` found changed in each store.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ReloadChanges".
 */
export interface ReloadChanges {
  project: NoteChanges;
  global: NoteChanges;
}
/**
 * The notes one store gained and lost between two reads.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "NoteChanges".
 */
export interface NoteChanges {
  added: string[];
  removed: string[];
}
/**
 * The ``memory.reveal`` result (an addition to SPEC §7's commands).
 *
 * ``shown``: whether the client showed the open memory document with the range
 * selected (``window/showDocument``); ``error``: why not (a bad argument, a
 * document that is not an open store, a client that cannot show documents).
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "RevealResult".
 */
export interface RevealResult {
  shown: boolean;
  error?: string;
}
/**
 * The result of ``memory.accept`` and ``memory.reject``: one result per proposal.
 *
 * Each of ``results`` is the :data:`MemoryResult` of one selected id: for an
 * accepted proposal, what its action returned; for a rejected one, the notes
 * with ``changed: false``; for an id that is not waiting, an error. ``text`` is
 * the readable account (what the CLI prints), ``error`` every refusal joined.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "ReviewResult".
 */
export interface ReviewResult {
  action: 'accept' | 'reject';
  changed: boolean;
  results: MemoryResult[];
  waiting: InboxCounts;
  text: string;
  error?: string;
}
/**
 * Everything a client can configure.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "Settings".
 */
export interface Settings {
  /**
   * Pi's agent dir (global store).
   */
  agentDir?: string | null;
  /**
   * Explicit trust decision for the project.
   */
  trusted?: boolean | null;
  /**
   * Refuse every change (plan modes).
   */
  readOnly?: boolean;
  /**
   * Severity per diagnostic code, or off.
   */
  severity?: {
    [k: string]: 'error' | 'warning' | 'information' | 'hint' | 'off' | undefined;
  };
  /**
   * Score (0-100) for `similar` hints.
   */
  similarThreshold?: number;
}
/**
 * The ``memory-ls sync`` / ``memory.sync`` result: what was committed, arrived and left.
 *
 * ``arrived`` and ``left`` are the notes the pull brought in and took away;
 * ``commit`` is the message of the commit of local changes, when one was made;
 * ``setup`` lists what the merge driver's set-up changed. On a refusal or a
 * failed pull or push, ``error`` says what happened and what to do; nothing
 * local is lost either way.
 *
 * This interface was referenced by `ServerShapes`'s JSON-Schema
 * via the `definition` "SyncResult".
 */
export interface SyncResult {
  scope: 'project' | 'global';
  repository: string;
  upstream: string;
  setup: string[];
  commit?: string;
  arrived: string[];
  left: string[];
  pushed: boolean;
  error?: string;
}
