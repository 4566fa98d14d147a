// One language client per window: starts `memory-ls serve`, restarts it, and runs the server's commands.
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  type ErrorHandler,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type DocumentSelector,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { type CommandResults, INBOX_NOTIFICATION, type InboxCounts, ServerCommand, type ServerCommandId } from './protocol';
import { SECTION, type ServerLaunch, globalStorePath, serverSettings } from './settings';

/**
 * How long a started server may take to answer `initialize` (`MEMORY_LS_START_TIMEOUT_MS`
 * overrides it, for tests). A `memory-ls` that never answers (a hung wrapper script, a
 * program of that name that is something else) used to keep every command waiting.
 */
const START_TIMEOUT_MS = Number(process.env['MEMORY_LS_START_TIMEOUT_MS']) || 30_000;

/** `promise`, or an error naming what did not happen after `ms` milliseconds. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class MemoryClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires after the server (re)started or after a command that may have changed a store. */
  readonly onDidChange = this.changed.event;
  private readonly inbox = new vscode.EventEmitter<InboxCounts>();
  /** Fires with the server's `memory/inbox` counts (a proposal arrived or was reviewed). */
  readonly onInbox = this.inbox.event;

  constructor(
    private readonly output: vscode.OutputChannel,
    /** The server to start (an existing memory-ls, or the private one); undefined: none is set up. */
    private readonly resolveLaunch: () => Promise<ServerLaunch | undefined>,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  documentSelector(): DocumentSelector {
    return [
      { scheme: 'file', pattern: '**/.pi/memory.md' },
      { scheme: 'file', pattern: globalStorePath() },
      { scheme: 'untitled', pattern: '**/.pi/memory.md' },
      // Instruction files get one diagnostic, export-stale, when they hold the export block (SPEC §15).
      { scheme: 'file', pattern: '**/{AGENTS,CLAUDE,GEMINI}.md' },
    ];
  }

  async start(): Promise<void> {
    if (this.starting !== undefined) {
      return this.starting;
    }
    this.starting = this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async doStart(): Promise<void> {
    if (this.client !== undefined) {
      return;
    }
    let launch: ServerLaunch | undefined;
    try {
      launch = await this.resolveLaunch();
    } catch (error) {
      this.output.appendLine(`Finding the memory-ls server failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      throw error;
    }
    if (launch === undefined) {
      this.output.appendLine('No memory-ls server is set up: nothing to start.');
      return;
    }
    const serverOptions: ServerOptions = {
      run: { command: launch.command, args: launch.args },
      debug: { command: launch.command, args: launch.args },
    };
    // Given up on (it did not answer `initialize` in time): never restarted by the library.
    let abandoned = false;
    let fallback: ErrorHandler | undefined;
    const clientOptions: LanguageClientOptions = {
      errorHandler: {
        error: (error, message, count) =>
          fallback?.error(error, message, count) ?? { action: ErrorAction.Shutdown },
        closed: () =>
          abandoned || fallback === undefined
            ? { action: CloseAction.DoNotRestart, handled: true }
            : fallback.closed(),
      },
      documentSelector: this.documentSelector(),
      outputChannel: this.output,
      initializationOptions: () => serverSettings(),
      synchronize: {
        configurationSection: SECTION,
        fileEvents: [
          vscode.workspace.createFileSystemWatcher('**/.pi/{memory.md,bytefly.json,memory.inbox.jsonl}'),
        ],
      },
      middleware: {
        workspace: {
          // Answer `workspace/configuration` for `memoryLs` with only what the user set
          // (so the server keeps its own defaults) plus VS Code's workspace trust.
          configuration: async (params, token, next) => {
            const answer = await next(params, token);
            if (!Array.isArray(answer)) {
              return answer;
            }
            return params.items.map((item, index) =>
              item.section === SECTION ? serverSettings() : (answer[index] as unknown),
            );
          },
        },
      },
    };
    const client = new LanguageClient('memoryLs', 'Memory', serverOptions, clientOptions);
    fallback = client.createDefaultErrorHandler();
    this.client = client;
    client.onNotification(INBOX_NOTIFICATION, (counts: InboxCounts) => this.inbox.fire(counts));
    this.output.appendLine(`Starting ${[launch.command, ...launch.args].join(' ')}`);
    try {
      await within(client.start(), START_TIMEOUT_MS, 'it did not answer initialize');
    } catch (error) {
      this.client = undefined;
      abandoned = true;
      // Not running, so this refuses to stop it, but ends its process 2 s later.
      void client.stop(2000).catch(() => undefined);
      const message = error instanceof Error ? error.message : String(error);
      void vscode.window
        .showErrorMessage(
          `Memory: could not start the language server (${[launch.command, ...launch.args].join(' ')}): ${message}`,
          'Open Settings',
        )
        .then((choice) => {
          if (choice === 'Open Settings') {
            void vscode.commands.executeCommand('workbench.action.openSettings', 'memoryLs.');
          }
        });
      throw error;
    }
    this.changed.fire();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined && client.state !== State.Stopped) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    if (this.starting !== undefined) {
      await this.starting.catch(() => undefined);
    }
    // A server that fails to stop (it exited first, or never answered) must not keep
    // the new one from starting.
    await this.stop().catch((error: unknown) => {
      this.output.appendLine(`Stopping memory-ls failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    await this.start();
  }

  /**
   * Run one of the server's `memory.*` commands with its single JSON-object argument.
   * The project is the workspace folder of the active editor, else the first folder.
   */
  async execute<C extends ServerCommandId>(command: C, argument: Record<string, unknown> = {}): Promise<CommandResults[C]> {
    if (!this.running) {
      await this.start();
    }
    const client = this.client;
    if (client === undefined) {
      throw new Error('the memory-ls server is not set up: run "Memory: Set up server", or install memory-ls on PATH.');
    }
    const uri = projectUri();
    const payload = uri !== undefined && argument['uri'] === undefined ? { ...argument, uri } : argument;
    const result = (await client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: [payload],
    })) as CommandResults[C];
    if (command !== ServerCommand.list && command !== ServerCommand.path && command !== ServerCommand.inject && command !== ServerCommand.doctor && command !== ServerCommand.inbox) {
      this.changed.fire();
    }
    return result;
  }

  dispose(): void {
    void this.stop();
    this.changed.dispose();
    this.inbox.dispose();
  }
}

function projectUri(): string | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active !== undefined) {
    const folder = vscode.workspace.getWorkspaceFolder(active);
    if (folder !== undefined) {
      return folder.uri.toString();
    }
  }
  return vscode.workspace.workspaceFolders?.[0]?.uri.toString();
}
