/**
 * Test helpers: spawn the real oma-host (and, where needed, the provider
 * simulator) and connect vscode-jsonrpc to its stdio, as the extension's
 * language client does.
 *
 * The host command is `python3 -m oma_host` run from the repository root, or
 * the words of $OMA_HOST_COMMAND.
 */

import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before } from 'node:test';

import {
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';

import type { AgentConfig, InitializeResult, InitializationOptions } from '../src/core/protocol';
import { OmaSession, type SessionOptions } from '../src/core/session';

/** editors/vscode/out/test → the repository root. */
export const REPO_ROOT = resolve(__dirname, '..', '..', '..', '..');
export const PNG_FIXTURE = resolve(REPO_ROOT, 'tests', 'editors', 'fixtures', 'red-square.png');
const PYTHON = process.env.PYTHON ?? 'python3';

export interface Host {
  connection: MessageConnection;
  child: ChildProcess;
  initializeResult: InitializeResult;
  stderr(): string;
  close(): Promise<number | null>;
}

// Every host these tests start inherits it: they offer the in-process test provider.
process.env.OMA_HOST_TEST_PROVIDER = '1';

function hostCommand(): [string, string[]] {
  const words = (process.env.OMA_HOST_COMMAND ?? '').split(/\s+/).filter(Boolean);
  if (words.length > 0) {
    return [words[0], words.slice(1)];
  }
  return [PYTHON, ['-m', 'oma_host']];
}

/** The host command as a person would type it, and where it came from. */
export function hostCommandLine(): string {
  const [command, args] = hostCommand();
  const from = process.env.OMA_HOST_COMMAND?.trim()
    ? 'OMA_HOST_COMMAND'
    : 'the default; set OMA_HOST_COMMAND';
  return `\`${[command, ...args].join(' ')}\` (${from})`;
}

/** Generous: the host answers initialize in about a second, even on a loaded machine. */
const START_TIMEOUT_MS = 60_000;

/**
 * A promise that fails, saying why, when `child` cannot be spawned, exits, or
 * stays silent past START_TIMEOUT_MS; `settle()` ends the watch once the
 * host has answered.
 */
function startFailure(
  child: ChildProcess,
  stderr: () => string,
): { failed: Promise<never>; settle(): void } {
  const shown = hostCommandLine();
  const tail = (): string => {
    const text = stderr().trim();
    return text === '' ? 'it wrote nothing on stderr' : `its stderr ends:\n${text.slice(-2000)}`;
  };
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, fail) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'ENOENT' ? 'no such command' : error.message;
      fail(new Error(`the host could not be started with ${shown}: ${why}`));
    });
    child.once('close', (code, signal) =>
      fail(new Error(`the host ${shown} exited (${code ?? signal}) before answering initialize; ${tail()}`)),
    );
    const seconds = START_TIMEOUT_MS / 1000;
    timer = setTimeout(
      () => fail(new Error(`the host ${shown} did not answer initialize within ${seconds} s; ${tail()}`)),
      START_TIMEOUT_MS,
    );
  });
  failed.catch(() => undefined); // a host that exits after it started is close()'s business
  return { failed, settle: () => clearTimeout(timer) };
}

/** Spawn the host, connect, and initialize it; fails naming the command when the host cannot start. */
export async function startHost(options: InitializationOptions = {}): Promise<Host> {
  const [command, args] = hostCommand();
  const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const start = startFailure(child, () => stderr);
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const connection = createMessageConnection(
    new StreamMessageReader(child.stdout!),
    new StreamMessageWriter(child.stdin!),
  );
  connection.listen();
  const answered = connection
    .sendRequest<InitializeResult>('initialize', {
      processId: process.pid,
      clientInfo: { name: 'oma-vscode-tests' },
      rootUri: null,
      capabilities: {},
      initializationOptions: options,
    })
    .catch((error: unknown) => {
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(`the host ${hostCommandLine()} answered initialize with an error: ${why}`);
    });
  let initializeResult: InitializeResult;
  try {
    initializeResult = await Promise.race([answered, start.failed]);
  } catch (error) {
    child.kill('SIGKILL');
    connection.dispose();
    throw error;
  } finally {
    start.settle();
  }
  await connection.sendNotification('initialized', {});
  return {
    connection,
    child,
    initializeResult,
    stderr: () => stderr,
    async close() {
      if (child.exitCode === null) {
        try {
          await connection.sendRequest('shutdown');
          await connection.sendNotification('exit');
        } catch {
          child.kill('SIGKILL');
        }
      }
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise<null>((done) => (timer = setTimeout(() => done(null), 10_000))),
      ]);
      clearTimeout(timer);
      if (child.exitCode === null) {
        child.kill('SIGKILL');
      }
      connection.dispose();
      return code;
    },
  };
}

export interface Simulator {
  baseURL: string;
  /** The lines it printed after its URL (a fixture's reports), in order. */
  lines: string[];
  close(): void;
}

/**
 * The provider simulator on a free port (`python3 -m oma_host.testing.simulator
 * --port 0`), or a scripted one from tests/editors/fixtures (`fixture`: its
 * file name there, given `fixtureArgs`), which prints its URL the same way.
 */
export async function startSimulator(fixture?: string, fixtureArgs: string[] = []): Promise<Simulator> {
  const args =
    fixture === undefined
      ? ['-m', 'oma_host.testing.simulator', '--port', '0']
      : [resolve(REPO_ROOT, 'tests', 'editors', 'fixtures', fixture), ...fixtureArgs];
  const child = spawn(PYTHON, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, PYTHONPATH: REPO_ROOT },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const reported: string[] = [];
  const baseURL = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error('the simulator did not start within 30 s'));
    }, 30_000);
    let started = false;
    lines.on('line', (line) => {
      const match = started ? null : /listening on (http:\/\/\S+)/.exec(line);
      if (match) {
        started = true;
        clearTimeout(timer);
        done(match[1]);
      } else if (started) {
        reported.push(line);
      }
    });
    child.on('exit', (code) => fail(new Error(`the simulator exited (${code})`)));
  });
  return { baseURL, lines: reported, close: () => child.kill('SIGTERM') };
}

/**
 * The scripted ACP agent of the interop tests (on @agentclientprotocol/sdk),
 * installing its npm packages first when they are missing.
 */
export function acpAgentScript(): string {
  const folder = resolve(REPO_ROOT, 'tests', 'interop', 'acp_agent');
  if (!existsSync(resolve(folder, 'node_modules', '@agentclientprotocol', 'sdk', 'package.json'))) {
    const done = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: folder, encoding: 'utf8' });
    if (done.status !== 0) {
      throw new Error(`npm ci in ${folder} failed: ${done.stderr}`);
    }
  }
  return resolve(folder, 'agent.mjs');
}

export function processAgent(name: string, script: string): AgentConfig {
  return { name, backend: { kind: 'process', command: 'sh', args: ['-c', script] } };
}

export function echoAgent(name = 'echo', model = 'echo'): AgentConfig {
  return { name, provider: 'test', model };
}

/**
 * A host and a session for one test file, and with `simulator` the provider
 * simulator (startSimulator's `fixture` and `args`) started before them: all
 * started before its tests, stopped after them (the host must then exit with
 * 0). `agentNamed` is the session's lookup of configured agents (the
 * extension's reads the settings). Read them from the returned object inside tests.
 */
export function useHostSession(
  simulator?: { fixture?: string; args?: string[] },
  agentNamed?: SessionOptions['agentNamed'],
): {
  host: Host;
  session: OmaSession;
  simulator: Simulator;
} {
  const context = {} as { host: Host; session: OmaSession; simulator: Simulator };
  before(async () => {
    // One after the other, so that `after` can stop whichever started.
    if (simulator !== undefined) {
      context.simulator = await startSimulator(simulator.fixture, simulator.args);
    }
    context.host = await startHost();
    context.session = new OmaSession(context.host.connection, { clientName: 'test', agentNamed });
  });
  after(async () => {
    context.session?.dispose();
    context.simulator?.close();
    if (context.host !== undefined) {
      assert.equal(await context.host.close(), 0, context.host.stderr());
    }
  });
  return context;
}
