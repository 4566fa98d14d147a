// The `memoryLs` settings: what starts the server, what is sent to it, and where the global store is.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ServerSettings } from './protocol';

export const SECTION = 'memoryLs';

/** Keys forwarded to the server (its `memoryLs` section), camelCase as on the wire. */
const SERVER_KEYS = ['agentDir', 'readOnly', 'severity', 'similarThreshold'] as const satisfies readonly (keyof ServerSettings)[];

/** Settings that need a new server process (and a new document selector) when they change. */
export const RESTART_KEYS = ['serverCommand', 'pythonPath', 'agentDir'] as const;

export interface ServerLaunch {
  command: string;
  args: string[];
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

/** A value only when the user set it somewhere (so the server's own defaults apply otherwise). */
function explicitValue<T>(key: string): T | undefined {
  const inspected = config().inspect<T>(key);
  if (inspected === undefined) {
    return undefined;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/**
 * The `memoryLs` section as the server sees it, with VS Code's workspace trust as `trusted`.
 * Values go as the user wrote them: the server reports an invalid one and keeps its default.
 */
export function serverSettings(): ServerSettings {
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = explicitValue<unknown>(key);
    if (value === undefined || value === '' || value === null) {
      continue;
    }
    if (key === 'agentDir' && typeof value === 'string') {
      settings[key] = expandHome(value);
    } else {
      settings[key] = value;
    }
  }
  return { ...(settings as ServerSettings), trusted: vscode.workspace.isTrusted };
}

/** `memoryLs.pythonPath`, when set: a Python with memory-ls, or the one to set up the server with. */
export function configuredPython(): string | undefined {
  const python = (config().get<string>('pythonPath', '') ?? '').trim();
  return python === '' ? undefined : expandHome(python);
}

/** `memoryLs.serverCommand`, only when the user set it (its default means "memory-ls on PATH"). */
export function explicitServerCommand(): ServerLaunch | undefined {
  const inspected = config().inspect<unknown>('serverCommand');
  // In an untrusted workspace only the user's own value counts (a restricted setting).
  const configured = vscode.workspace.isTrusted
    ? (inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue)
    : inspected?.globalValue;
  const parts = Array.isArray(configured)
    ? configured.filter((part): part is string => typeof part === 'string' && part !== '')
    : [];
  const [command, ...args] = parts;
  return command === undefined ? undefined : { command: expandHome(command), args };
}

export function expandHome(value: string): string {
  if (value === '~') {
    return os.homedir();
  }
  if (value.startsWith('~/')) {
    return path.join(os.homedir(), value.slice(2));
  }
  return value;
}

/** The agent dir as SPEC §1 resolves it: the setting, else $PI_CODING_AGENT_DIR, else ~/.pi/agent. */
export function agentDir(): string {
  const configured = (config().get<string>('agentDir', '') ?? '').trim();
  if (configured !== '') {
    return expandHome(configured);
  }
  const fromEnv = process.env['PI_CODING_AGENT_DIR'];
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    return expandHome(fromEnv.trim());
  }
  return path.join(os.homedir(), '.pi', 'agent');
}

export function globalStorePath(): string {
  return path.join(agentDir(), 'memory.md');
}

export function statusBarEnabled(): boolean {
  return config().get<boolean>('statusBar', true);
}
