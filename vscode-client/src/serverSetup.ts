// Which memory-ls the extension starts (SPEC §16). An existing one always wins: `memoryLs.pythonPath`
// when that Python has memory-ls, an explicit `memoryLs.serverCommand`, then `memory-ls` on PATH.
// Without one, the wheel shipped in this .vsix (dist/server/*.whl) is installed into a private venv
// in the extension's global storage, with the first Python >= 3.11 found, after the user agrees.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  type InstalledServer,
  execText,
  findOnPath,
  installedServer,
  markInstalled,
  runStep,
  venvBin,
  withLock,
} from './processes';
import { type ServerLaunch, configuredPython, explicitServerCommand } from './settings';

const INSTALLED_KEY = 'memoryLs.installedServer';
const MIN_PYTHON = [3, 11] as const;
const SET_UP = 'Set Up Server';
const OPEN_LOG = 'Open Log';
const OPEN_SETTINGS = 'Open Settings';

type Installed = InstalledServer;

/** Why a step of the setup failed, and what the user should do about it. */
class SetupError extends Error {
  constructor(
    message: string,
    readonly settings = false,
  ) {
    super(message);
  }
}

export class ServerSetup {
  /** The user dismissed the offer in this window: do not ask again until they run the command. */
  private declined = false;
  private installing: Promise<ServerLaunch | undefined> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
  ) {}

  /** The private venv in global storage. */
  get venvDir(): string {
    return path.join(this.context.globalStorageUri.fsPath, 'server-venv');
  }

  /** The server to start: an existing one, else the private one (offering to install it). */
  async launch(): Promise<ServerLaunch | undefined> {
    const existing = await this.existingServer();
    if (existing !== undefined) {
      return existing;
    }
    const wheel = this.bundledWheel();
    // Read from the venv itself (shared by every window): its memory-ls script and the marker
    // written when pip finished. A venv from before the marker counts by this window's record.
    const record = this.context.globalState.get<Installed>(INSTALLED_KEY);
    const installed =
      installedServer(this.venvDir) ??
      (record !== undefined && fs.existsSync(venvBin(this.venvDir, 'memory-ls')) ? record : undefined);
    if (installed !== undefined) {
      if (wheel === undefined || installed.sha256 === sha256(wheel)) {
        return this.privateLaunch();
      }
      // An upgraded extension ships a newer wheel: the user agreed to a private server already.
      this.output.appendLine(`The extension ships ${path.basename(wheel)}; the private server has ${installed.wheel}: reinstalling.`);
      return this.install();
    }
    if (this.declined) {
      this.output.appendLine('memory-ls is not set up (the offer was dismissed): run "Memory: Set up server".');
      return undefined;
    }
    const choice = await vscode.window.showInformationMessage(
      'Memory: the memory-ls language server is not installed (no memoryLs.serverCommand, no memory-ls on PATH). ' +
        'Set it up now in a private environment? This needs Python 3.11 or newer.',
      SET_UP,
      OPEN_SETTINGS,
    );
    if (choice === OPEN_SETTINGS) {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'memoryLs.');
    }
    if (choice !== SET_UP) {
      this.declined = true;
      this.output.appendLine('memory-ls is not set up: run "Memory: Set up server", or install memory-ls on PATH.');
      return undefined;
    }
    return this.install();
  }

  /** "Memory: Set up server": install the private server, unless an existing one is used anyway. */
  async setUpFromCommand(): Promise<boolean> {
    const existing = await this.existingServer();
    if (existing !== undefined) {
      void vscode.window.showInformationMessage(
        `Memory: using ${[existing.command, ...existing.args].join(' ')}; the private server is only used when no memoryLs.serverCommand is set and memory-ls is not on PATH.`,
      );
      return false;
    }
    this.declined = false;
    return (await this.install()) !== undefined;
  }

  /** A server the user already has: pythonPath with memory-ls, an explicit serverCommand, or PATH's. */
  async existingServer(): Promise<ServerLaunch | undefined> {
    const python = configuredPython();
    if (python !== undefined && (await hasMemoryLs(python))) {
      return { command: python, args: ['-m', 'memory_ls', 'serve'] };
    }
    const command = explicitServerCommand();
    if (command !== undefined) {
      this.output.appendLine(`memoryLs.serverCommand: ${[command.command, ...command.args].join(' ')}`);
      return command;
    }
    // Not from a folder of a workspace the user has not trusted, nor from a relative PATH entry.
    const untrusted = vscode.workspace.isTrusted ? [] : (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const onPath = findOnPath('memory-ls', untrusted);
    if (onPath !== undefined) {
      return { command: onPath, args: ['serve'] };
    }
    return undefined;
  }

  /** The wheel packaged in the .vsix, if any (a development build may have none). */
  bundledWheel(): string | undefined {
    const folder = path.join(this.context.extensionPath, 'dist', 'server');
    try {
      const wheels = fs.readdirSync(folder).filter((name) => /^memory_ls-.+\.whl$/.test(name)).sort();
      const last = wheels[wheels.length - 1];
      return last === undefined ? undefined : path.join(folder, last);
    } catch {
      return undefined;
    }
  }

  private privateLaunch(): ServerLaunch {
    return { command: venvBin(this.venvDir, 'memory-ls'), args: ['serve'] };
  }

  private install(): Promise<ServerLaunch | undefined> {
    this.installing ??= this.doInstall().finally(() => {
      this.installing = undefined;
    });
    return this.installing;
  }

  private async doInstall(): Promise<ServerLaunch | undefined> {
    try {
      const wheel = this.bundledWheel();
      if (wheel === undefined) {
        throw new SetupError(
          'this build of the extension carries no memory-ls wheel. Install memory-ls yourself (pipx install memory-ls) or set memoryLs.serverCommand.',
          true,
        );
      }
      const installed = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Memory: setting up the memory-ls server', cancellable: true },
        async (progress, token) => {
          progress.report({ message: 'looking for Python 3.11 or newer…' });
          const python = await this.findPython();
          const digest = sha256(wheel);
          // One window at a time: another window setting up at once would delete this venv.
          return withLock(`${this.venvDir}.lock`, async () => {
            const done = installedServer(this.venvDir);
            if (done !== undefined && done.sha256 === digest) {
              return done; // another window installed this wheel while this one waited
            }
            progress.report({ message: `creating a private environment with ${python}…` });
            // Forget the old install first: interrupted from here on, nothing claims a server.
            await this.context.globalState.update(INSTALLED_KEY, undefined);
            fs.rmSync(this.venvDir, { recursive: true, force: true });
            fs.mkdirSync(path.dirname(this.venvDir), { recursive: true });
            const venv = await this.run(python, ['-m', 'venv', this.venvDir], token);
            if (venv.code !== 0) {
              const hint = /ensurepip|venv/.test(venv.text)
                ? ' Its venv module is missing: install it (Debian/Ubuntu: sudo apt install python3-venv) or set memoryLs.pythonPath to another Python 3.11+.'
                : '';
              throw new SetupError(`${python} -m venv failed (exit ${venv.code}).${hint}`, hint !== '');
            }
            progress.report({ message: `installing ${path.basename(wheel)} and its dependencies (pip)…` });
            const pip = await this.run(
              venvBin(this.venvDir, 'python'),
              ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', wheel],
              token,
            );
            if (pip.code !== 0) {
              throw new SetupError(
                `pip could not install memory-ls into ${this.venvDir} (exit ${pip.code}). pip needs your package index for its dependencies (pygls, pydantic, mcp, …): check your network and pip's configuration (pip.conf, PIP_INDEX_URL, proxy), then run "Memory: Set up server".`,
              );
            }
            const record: Installed = { wheel: path.basename(wheel), sha256: digest, python };
            markInstalled(this.venvDir, record);
            return record;
          });
        },
      );
      await this.context.globalState.update(INSTALLED_KEY, installed);
      this.output.appendLine(`memory-ls set up in ${this.venvDir} from ${installed.wheel} (${installed.python}).`);
      return this.privateLaunch();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.output.appendLine(`Setting up memory-ls failed: ${message}`);
      const buttons = error instanceof SetupError && error.settings ? [OPEN_LOG, OPEN_SETTINGS] : [OPEN_LOG];
      void vscode.window.showErrorMessage(`Memory: setting up the server failed: ${message}`, ...buttons).then((choice) => {
        if (choice === OPEN_LOG) {
          this.output.show(true);
        } else if (choice === OPEN_SETTINGS) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'memoryLs.pythonPath');
        }
      });
      return undefined;
    }
  }

  /** The first Python >= 3.11: memoryLs.pythonPath, the Python extension's interpreter, python3. */
  private async findPython(): Promise<string> {
    const candidates: string[] = [];
    const configured = configuredPython();
    if (configured !== undefined) {
      candidates.push(configured);
    }
    const fromExtension = await pythonExtensionInterpreter();
    if (fromExtension !== undefined) {
      candidates.push(fromExtension);
    }
    candidates.push(process.platform === 'win32' ? 'python' : 'python3');
    const tried: string[] = [];
    for (const candidate of candidates) {
      const version = await pythonVersion(candidate);
      this.output.appendLine(`Python candidate ${candidate}: ${version === undefined ? 'not found' : version.join('.')}`);
      if (version !== undefined && compareVersion(version, MIN_PYTHON) >= 0) {
        return candidate;
      }
      tried.push(`${candidate} (${version === undefined ? 'not found' : version.join('.')})`);
    }
    throw new SetupError(
      `no Python 3.11 or newer was found (tried ${tried.join(', ')}). Install Python 3.11+ (python.org, or your package manager) and set memoryLs.pythonPath to it, then run "Memory: Set up server".`,
      true,
    );
  }

  /** Run a process, its output going to the log; resolves with its exit code and output. */
  private run(command: string, args: string[], token: vscode.CancellationToken): Promise<{ code: number; text: string }> {
    this.output.appendLine(`$ ${[command, ...args].join(' ')}`);
    const abort = new AbortController();
    const cancel = token.onCancellationRequested(() => abort.abort());
    if (token.isCancellationRequested) {
      abort.abort();
    }
    return runStep(command, args, (part) => this.output.append(part), abort.signal).finally(() => cancel.dispose());
  }
}

function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function compareVersion(version: readonly number[], minimum: readonly number[]): number {
  for (let i = 0; i < minimum.length; i += 1) {
    const difference = (version[i] ?? 0) - (minimum[i] ?? 0);
    if (difference !== 0) {
      return difference;
    }
  }
  return 0;
}

/** [major, minor] of a Python, or undefined when it cannot be run. */
async function pythonVersion(python: string): Promise<number[] | undefined> {
  const result = await execText(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])']);
  const match = /^(\d+)\.(\d+)/.exec(result.stdout.trim());
  return result.ok && match !== null ? [Number(match[1]), Number(match[2])] : undefined;
}

async function hasMemoryLs(python: string): Promise<boolean> {
  return (await execText(python, ['-c', 'import memory_ls'])).ok;
}

/** The interpreter the Python extension (ms-python.python) selected, when it is installed. */
async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = (extension.isActive ? extension.exports : await extension.activate()) as PythonApi | undefined;
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const environments = api?.environments;
    if (environments !== undefined) {
      const active = environments.getActiveEnvironmentPath(resource);
      const resolved = await environments.resolveEnvironment(active);
      const executable = resolved?.executable.uri?.fsPath;
      if (executable !== undefined) {
        return executable;
      }
    }
    return api?.settings?.getExecutionDetails(resource).execCommand?.[0];
  } catch {
    return undefined;
  }
}

/** The part of the Python extension's API read here. */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(environment: { path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}
