/**
 * The client side of an oma-host connection: agents, runs, progress,
 * cancellation, conversation history and the permission request.
 *
 * Which method serves which ask:
 * - `ask`  (Ask agent, Ask about image): a one-off question, `agent/stream`,
 *   its reply streamed from `$/progress` events of the partialResultToken;
 *   it neither reads nor changes the conversation.
 * - `chat` (Chat with agent, the `@oma` chat participant): a conversation
 *   turn, `agent/prompt`. It is sent with a partialResultToken so a host
 *   that streams prompts streams it; a host whose agent/prompt refuses that
 *   field (InvalidParams naming it) is asked again without it, once per
 *   session, and the reply is written when the turn completes (the work-done
 *   progress shows meanwhile). History and reset act on these turns.
 * - `runOnce` (Run agent on selection): `oma/runAgent`, a fresh one-off agent
 *   with `progress: true` (`oma/progress` notifications for its runId).
 *
 * Every run carries a workDoneToken so the editor can show progress, and a
 * CancellationToken: cancelling sends `$/cancelRequest` and the run ends with
 * the host's -32800 answer and its partial result.
 *
 * Agents are created on first use, one per configured name, and recreated when
 * their config changes or the host no longer knows them (it was restarted).
 * The host binds each name in `config.delegates` to the agent of that name
 * created before, so an agent's configured delegates (`agentNamed`; their own
 * delegates too) are created first when this session does not know them yet.
 * `models` lists the agent's provider's models (models/list); `switchModel`
 * moves an agent to another model with its conversation (agent/history into
 * the new agent's `config.history`).
 */

import {
  type CancellationToken,
  CancellationTokenSource,
  type Disposable,
  ProgressType,
} from 'vscode-jsonrpc';

import { cancelledPartial, describeError, isAgentNotFound, isCancelled, refusesField } from './errors';
import { type Ask, promptInput, runInput } from './input';
import { modelsListParams } from './modelChoice';
import { answerPermission, type PermissionAsker } from './permission';
import type {
  AgentConfig,
  AgentRunResult,
  LLMMessage,
  ModelInfo,
  OmaProgressParams,
  PromptInput,
  RunInput,
  ServerRequests,
  StreamEvent,
  WorkDoneBegin,
  WorkDoneEnd,
  WorkDoneReport,
} from './protocol';
import { request, type RpcPeer } from './rpc';
import { ReplyAssembler } from './stream';

/** What `$/progress` carries for a workDoneToken (LSP work-done progress). */
export type WorkDoneValue = WorkDoneBegin | WorkDoneReport | WorkDoneEnd;

export interface RunObserver {
  /** Rendered text to append to the reply document, in order. */
  onText?(delta: string): void;
  /** Every StreamEvent of an agent/stream run, as it arrives. */
  onEvent?(event: StreamEvent): void;
  /** The host's work-done progress for this run (begin, then end). */
  onWorkDone?(value: WorkDoneValue): void;
  /** `oma/progress` notifications of an oma/runAgent run. */
  onRunProgress?(event: OmaProgressParams): void;
  /** A run that ends with an error: given this, the error line is not appended to the text. */
  onError?(message: string): void;
}

export type RunOutcome =
  | { kind: 'done'; result: AgentRunResult; text: string }
  | { kind: 'cancelled'; partial: AgentRunResult | undefined; text: string }
  | { kind: 'error'; message: string; error: unknown; text: string };

export interface RunHandle {
  readonly id: number;
  readonly label: string;
  /** Settles when the run is over; never rejects. */
  readonly outcome: Promise<RunOutcome>;
  /** Sends `$/cancelRequest` for the run (no-op once it is over). */
  cancel(): void;
}

export interface SessionOptions {
  /** Answers `agent/requestPermission`; without it every request is rejected. */
  permission?: PermissionAsker;
  /** Prefix of progress tokens and runIds, to tell this client's runs apart in traces. */
  clientName?: string;
  /** The configured agent of that name: an agent's delegates are created from it before the agent. */
  agentNamed?: (name: string) => AgentConfig | undefined;
}

interface KnownAgent {
  key: string;
  id: Promise<string>;
}

interface RunContext {
  token: CancellationToken;
  assembler: ReplyAssembler;
  observer: RunObserver;
  workDoneToken: string;
  partialResultToken: string;
  runId: string;
}

const streamEvents = new ProgressType<StreamEvent>();
const workDone = new ProgressType<WorkDoneValue>();

export class OmaSession {
  private readonly agents = new Map<string, KnownAgent>();
  private readonly runs = new Map<number, RunHandle>();
  private readonly runProgress = new Map<string, RunObserver>();
  private readonly disposables: Disposable[] = [];
  private readonly clientName: string;
  private readonly agentNamed: (name: string) => AgentConfig | undefined;
  private permission: PermissionAsker | undefined;
  private counter = 0;
  /** Whether the host's agent/prompt takes a partialResultToken; undefined until a prompt tells. */
  private promptStreams: boolean | undefined;

  constructor(
    private readonly peer: RpcPeer,
    options: SessionOptions = {},
  ) {
    this.permission = options.permission;
    this.clientName = options.clientName ?? 'oma-client';
    this.agentNamed = options.agentNamed ?? (() => undefined);
    this.disposables.push(
      peer.onRequest('agent/requestPermission', (params: unknown) => this.onPermission(params)),
      peer.onNotification('oma/progress', (params: unknown) => this.onRunProgress(params)),
    );
  }

  setPermissionAsker(asker: PermissionAsker | undefined): void {
    this.permission = asker;
  }

  // -- agents -----------------------------------------------------------------

  /**
   * The host's agentId for `config`, creating (or recreating) the agent as
   * needed, after its configured delegates. Every agent/create is sent at
   * once, delegates first: the host finishes the creates it read before one
   * that names delegates, so nothing here waits on another agent.
   */
  agentId(config: AgentConfig): Promise<string> {
    const delegates = this.createDelegates(config, new Set([config.name]));
    const id = this.createAgent(config);
    // A delegate the host refused is why the agent naming it is refused too: say so.
    return id.catch(async (error: unknown) => {
      for (const delegate of delegates) {
        await delegate;
      }
      throw error;
    });
  }

  /**
   * Sends agent/create for each configured delegate of `config` the session
   * does not know with that config, depth first. `chain` holds the names on
   * the way here: a cycle, like a name not configured, is left to the host,
   * which refuses the agent naming it.
   */
  private createDelegates(config: AgentConfig, chain: ReadonlySet<string>): Promise<string>[] {
    const names = Array.isArray(config.delegates) ? config.delegates : [];
    const created: Promise<string>[] = [];
    for (const name of names) {
      const delegate = typeof name === 'string' && !chain.has(name) ? this.agentNamed(name) : undefined;
      if (delegate !== undefined) {
        created.push(...this.createDelegates(delegate, new Set([...chain, name])));
        created.push(this.createAgent(delegate));
      }
    }
    return created;
  }

  /** The agentId for `config` without looking at its delegates: known, or created now. */
  private createAgent(config: AgentConfig): Promise<string> {
    const key = JSON.stringify(config);
    const known = this.agents.get(config.name);
    if (known !== undefined && known.key === key) {
      return known.id;
    }
    if (known !== undefined) {
      void this.disposeQuietly(known.id);
    }
    const id = request(this.peer, 'agent/create', { config }).then((answer) => answer.agentId);
    const entry: KnownAgent = { key, id };
    this.agents.set(config.name, entry);
    // A failed create is not cached: the next ask tries again (e.g. after a settings fix).
    id.catch(() => {
      if (this.agents.get(config.name) === entry) {
        this.agents.delete(config.name);
      }
    });
    return id;
  }

  /** The models of the agent's provider (models/list; the host caches the list per session). */
  async models(config: AgentConfig): Promise<ModelInfo[]> {
    const answer = await request(this.peer, 'models/list', modelsListParams(config));
    return answer.models;
  }

  /**
   * The agent with `model` from now on, keeping its conversation: a new agent
   * is created with the old one's history (`config.history` from
   * agent/history) and the old one is disposed. Answers the new config, which
   * later asks must pass (an agent not created yet just starts with it).
   */
  async switchModel(config: AgentConfig, model: string): Promise<AgentConfig> {
    const switched: AgentConfig = { ...config, model };
    const known = this.agents.get(config.name);
    if (known === undefined || JSON.stringify(switched) === known.key) {
      return switched;
    }
    const history = await this.history(config);
    const id = request(this.peer, 'agent/create', { config: { ...switched, history } }).then(
      (answer) => answer.agentId,
    );
    await id; // a refused config leaves the old agent in place
    this.agents.set(config.name, { key: JSON.stringify(switched), id });
    void this.disposeQuietly(known.id);
    return switched;
  }

  /** Forget every agentId: the host was restarted and knows none of them. */
  forgetAgents(): void {
    this.agents.clear();
  }

  /** Dispose every agent on the host (the settings changed). */
  async disposeAgents(): Promise<void> {
    const known = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(known.map((agent) => this.disposeQuietly(agent.id)));
  }

  private async disposeQuietly(id: Promise<string>): Promise<void> {
    try {
      await request(this.peer, 'agent/dispose', { agentId: await id });
    } catch {
      // Already gone (host restarted, or never created): nothing to dispose.
    }
  }

  /** Run `call` with the agent's id; once more with a new agent if the host lost it. */
  private async withAgent<R>(config: AgentConfig, call: (agentId: string) => Promise<R>): Promise<R> {
    const first = await this.agentId(config);
    try {
      return await call(first);
    } catch (error) {
      if (!isAgentNotFound(error)) {
        throw error;
      }
      if ((await this.agents.get(config.name)?.id) === first) {
        this.agents.delete(config.name);
      }
      return call(await this.agentId(config));
    }
  }

  // -- runs -------------------------------------------------------------------

  /** A one-off ask, streamed: agent/stream. */
  ask(config: AgentConfig, ask: Ask, observer: RunObserver = {}): RunHandle {
    return this.stream(config, runInput(config, ask), observer);
  }

  /** agent/stream with a ready input (a whole conversation, e.g. from VS Code's language model API). */
  stream(config: AgentConfig, input: RunInput, observer: RunObserver = {}): RunHandle {
    return this.start(`ask ${config.name}`, observer, (context) => {
      return this.withAgent(config, (agentId) =>
        request(
          this.peer,
          'agent/stream',
          {
            agentId,
            input,
            partialResultToken: context.partialResultToken,
            workDoneToken: context.workDoneToken,
          },
          context.token,
        ),
      );
    });
  }

  /** A conversation turn: agent/prompt (kept in the agent's history). */
  chat(config: AgentConfig, ask: Ask, observer: RunObserver = {}): RunHandle {
    return this.start(`chat ${config.name}`, observer, (context) => {
      const input = promptInput(config, ask);
      return this.withAgent(config, (agentId) => this.prompt(agentId, input, context));
    });
  }

  /** Whether conversation turns stream (known after the first turn). */
  get promptsStream(): boolean | undefined {
    return this.promptStreams;
  }

  private async prompt(agentId: string, input: PromptInput, context: RunContext): Promise<AgentRunResult> {
    const params = { agentId, input, workDoneToken: context.workDoneToken };
    if (this.promptStreams !== false) {
      try {
        const result = await request(
          this.peer,
          'agent/prompt',
          { ...params, partialResultToken: context.partialResultToken },
          context.token,
        );
        this.promptStreams = true;
        return result;
      } catch (error) {
        if (this.promptStreams === true || !refusesField(error, 'partialResultToken')) {
          throw error;
        }
        this.promptStreams = false; // this host's agent/prompt has no stream
      }
    }
    return request(this.peer, 'agent/prompt', params, context.token);
  }

  /** A fresh one-off agent: oma/runAgent with progress notifications. */
  runOnce(config: AgentConfig, ask: Ask, observer: RunObserver = {}): RunHandle {
    return this.start(`run ${config.name}`, observer, (context) => {
      this.runProgress.set(context.runId, observer);
      return request(
        this.peer,
        'oma/runAgent',
        {
          config,
          input: runInput(config, ask),
          progress: true,
          runId: context.runId,
          workDoneToken: context.workDoneToken,
        },
        context.token,
      );
    });
  }

  /** Runs in flight, oldest first. */
  inFlight(): RunHandle[] {
    return [...this.runs.values()];
  }

  /** Cancel every run in flight; returns how many were. */
  cancelAll(): number {
    const runs = this.inFlight();
    runs.forEach((run) => run.cancel());
    return runs.length;
  }

  private start(
    label: string,
    observer: RunObserver,
    send: (context: RunContext) => Promise<AgentRunResult>,
  ): RunHandle {
    const id = ++this.counter;
    const prefix = `${this.clientName}-${id}`;
    const source = new CancellationTokenSource();
    const context: RunContext = {
      token: source.token,
      assembler: new ReplyAssembler(),
      observer,
      workDoneToken: `${prefix}-work`,
      partialResultToken: `${prefix}-stream`,
      runId: `${prefix}-${Date.now().toString(36)}`,
    };
    const write = (delta: string): void => {
      if (delta !== '') {
        observer.onText?.(delta);
      }
    };
    const subscriptions = [
      this.peer.onProgress(streamEvents, context.partialResultToken, (event) => {
        observer.onEvent?.(event);
        write(context.assembler.push(event));
      }),
      this.peer.onProgress(workDone, context.workDoneToken, (value) => observer.onWorkDone?.(value)),
    ];
    const outcome = this.settle(context, send, write).finally(() => {
      subscriptions.forEach((subscription) => subscription.dispose());
      this.runProgress.delete(context.runId);
      this.runs.delete(id);
      source.dispose();
    });
    const handle: RunHandle = { id, label, outcome, cancel: () => source.cancel() };
    this.runs.set(id, handle);
    return handle;
  }

  private async settle(
    context: RunContext,
    send: (context: RunContext) => Promise<AgentRunResult>,
    write: (delta: string) => void,
  ): Promise<RunOutcome> {
    const { assembler } = context;
    try {
      const result = await send(context);
      write(assembler.finish(result));
      return { kind: 'done', result, text: assembler.text };
    } catch (error) {
      if (isCancelled(error) || context.token.isCancellationRequested) {
        const partial = cancelledPartial(error);
        write(assembler.cancelled(partial));
        return { kind: 'cancelled', partial, text: assembler.text };
      }
      const message = describeError(error);
      if (context.observer.onError !== undefined) {
        context.observer.onError(message);
        return { kind: 'error', message, error, text: assembler.text };
      }
      write(`${assembler.rendered === '' || assembler.rendered.endsWith('\n') ? '' : '\n'}[${message}]\n`);
      return { kind: 'error', message, error, text: assembler.text };
    }
  }

  // -- conversation -------------------------------------------------------------

  /** The agent's conversation (agent/history); empty when it has had no turn yet. */
  async history(config: AgentConfig): Promise<LLMMessage[]> {
    if (!this.agents.has(config.name)) {
      return [];
    }
    try {
      const answer = await request(this.peer, 'agent/history', { agentId: await this.agentId(config) });
      return answer.messages;
    } catch (error) {
      if (isAgentNotFound(error)) {
        this.agents.delete(config.name);
        return [];
      }
      throw error;
    }
  }

  /** Clear the agent's conversation (agent/reset). */
  async reset(config: AgentConfig): Promise<void> {
    if (!this.agents.has(config.name)) {
      return;
    }
    try {
      await request(this.peer, 'agent/reset', { agentId: await this.agentId(config) });
    } catch (error) {
      if (!isAgentNotFound(error)) {
        throw error;
      }
      this.agents.delete(config.name);
    }
  }

  // -- host to client -----------------------------------------------------------

  private async onPermission(params: unknown): Promise<ServerRequests['agent/requestPermission']['result']> {
    const asker = this.permission;
    if (asker === undefined) {
      return { approve: false };
    }
    return answerPermission(params, asker);
  }

  private onRunProgress(params: unknown): void {
    const event = params as OmaProgressParams;
    if (typeof event !== 'object' || event === null || typeof event.runId !== 'string') {
      return;
    }
    this.runProgress.get(event.runId)?.onRunProgress?.(event);
  }

  dispose(): void {
    this.cancelAll();
    this.disposables.forEach((disposable) => disposable.dispose());
  }
}
