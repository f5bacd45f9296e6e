/**
 * The oma-host wire types (docs/protocol.md), GENERATED from
 * docs/protocol.schema.json by `python3 -m oma_host.cli.ts_types`: do not edit
 * this file; change the host's models, regenerate the schema, then this file (a
 * test fails while it differs).
 *
 * Field names follow the wire exactly: camelCase protocol params, and the seed
 * data types' own names (`media_type`, `input_tokens`, `is_error`).
 */

/** The protocol version this file was generated for. */
export const PROTOCOL_VERSION = '0.2';

export interface AcpBackend {
  kind: 'acp';
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string | null;
  maxOutputBytes?: number;
  permission?: 'auto-approve' | 'reject' | 'ask-client';
  auth?: string | null;
  config?: Record<string, string | boolean>;
  allowWrites?: boolean;
}

/**
 * A wrapped ACP agent's `session/request_permission` and the option
 * answered (`decision`: its kind, or `cancelled`).
 */
export interface AcpPermission {
  title: string;
  kind: string | null;
  optionKinds: string[];
  decision: string;
  optionId?: string;
}

/**
 * A wrapped ACP agent's `session/update` with no event of its own: the
 * update's own camelCase fields, `kind` being its `sessionUpdate`.
 */
export interface AcpUpdate {
  kind: string;
}

/**
 * A wrapped ACP agent's update with no event of its own, streamed as it
 * sent it: `{kind: <sessionUpdate>, ...its own fields}`.
 */
export interface AcpUpdateEvent {
  type: 'acp_update';
  data: AcpUpdate;
}

export interface AgentCapabilities {
  methods: string[];
  providers: string[];
  backends: string[];
  structuredInput: true;
}

export interface AgentConfig {
  name: string;
  model?: string | null;
  models?: string[] | null;
  provider?: string | null;
  baseURL?: string | null;
  api?: 'chat' | 'responses' | null;
  apiKeyEnv?: string | null;
  apiKey?: string | null;
  systemPrompt?: string | null;
  maxTurns?: number | null;
  maxTokens?: number | null;
  temperature?: number | null;
  topP?: number | null;
  maxTokenBudget?: number | null;
  maxCostBudget?: number | null;
  fallbackModels?: string[] | null;
  loopDetection?: LoopDetectionConfig | 'off' | null;
  timeoutMs?: number | null;
  toolTimeoutMs?: number | null;
  toolPreset?: 'readonly' | 'readwrite' | 'full' | null;
  tools?: string[] | null;
  disallowedTools?: string[] | null;
  environment?: boolean | null;
  cwd?: string | null;
  additionalDirectories?: string[] | null;
  history?: unknown;
  hooks?: HooksConfig | null;
  outputSchema?: Record<string, unknown> | null;
  backend?: ProcessBackend | AcpBackend | null;
  mcpServers?: Array<McpServerHttp | McpServerStdio> | null;
  permissions?: PermissionRule[] | null;
  permissionMode?: 'ask' | 'accept-edits' | 'auto' | 'read-only' | null;
  sandbox?: 'off' | 'workspace-write' | 'read-only' | null;
  contextWindow?: number | null;
  context?: ContextConfig | null;
  pricing?: PricingConfig | null;
  thinking?: ThinkingConfig | null;
  promptCaching?: boolean | null;
  delegates?: string[] | null;
  delegation?: DelegationConfig | null;
}

export interface AgentListEntry {
  agentId: string;
  name: string;
  backend?: string;
}

export interface AgentRunResult {
  success: boolean;
  output: string;
  messages: LLMMessage[];
  tokenUsage: TokenUsage;
  toolCalls: ToolCallRecord[];
  status: RunStatus;
  identity: Record<string, string>;
  structured?: unknown;
  budgetExceeded?: boolean;
  aborted?: boolean;
  errorInfo?: ErrorInfo;
  cost?: Cost;
  model?: string;
}

/** The ACP bridge logged its agent in with this method. */
export interface Authenticated {
  methodId: string;
}

/** An ACP agent was logged in before its session opened. */
export interface AuthenticatedEvent {
  type: 'authenticated';
  data: Authenticated;
}

export interface BeforeRunAnswer {
  prompt: string;
  messages?: LLMMessage[];
}

export interface Capabilities {
  agent: AgentCapabilities;
}

export interface ClientScorer {
  name: string;
  kind: 'client';
}

/**
 * An image or a file of the compacted turns, which the compacted
 * conversation no longer holds: where it was (`message` and `block` in
 * the conversation before, `part` inside a tool result) and what it was.
 * A summary names it too.
 */
export interface CompactedMedia {
  kind: 'image' | 'file';
  message: number;
  block: number;
  part?: number;
  mediaType: string;
  url?: string;
  filename?: string;
}

/**
 * The conversation was compacted to fit the model's context window:
 * `before` and `after` messages, their estimated tokens, and why
 * (`trigger`: the estimate passed `context.compactAt`, the provider
 * answered that the request was too long, or `agent/compact` and
 * `/compact` asked). `summarize` put one summary text block in place of
 * the older turns (`summary`, its text); `sliding-window` dropped them
 * (`dropped`). `id` is the one its `compaction_started` carried.
 */
export interface Compaction {
  id?: string;
  strategy: 'summarize' | 'sliding-window';
  trigger: 'threshold' | 'too_long' | 'request';
  before: number;
  after: number;
  tokensBefore: number;
  tokensAfter: number;
  images: CompactedMedia[];
  dropped?: DroppedTurn[];
  summary?: string;
}

/** The conversation was compacted before a request to the provider. */
export interface CompactionEvent {
  type: 'compaction';
  data: Compaction;
}

/**
 * A compaction ended without compacting: the summary request failed
 * (`error` says why; the run fails with it) or the run was cancelled
 * (`cancelled`).
 */
export interface CompactionFailed {
  id: string;
  trigger: 'threshold' | 'too_long' | 'request';
  error: string;
  cancelled: boolean;
}

/** A compaction that began did not complete. */
export interface CompactionFailedEvent {
  type: 'compaction_failed';
  data: CompactionFailed;
}

/**
 * A compaction began: its `id` names it in the `compaction` or
 * `compaction_failed` event that ends it.
 */
export interface CompactionStarted {
  id: string;
  strategy: 'summarize' | 'sliding-window';
  trigger: 'threshold' | 'too_long' | 'request';
}

/** A compaction began, before its summary request. */
export interface CompactionStartedEvent {
  type: 'compaction_started';
  data: CompactionStarted;
}

export interface ContainsScorer {
  name?: string | null;
  kind: 'contains';
  text: string;
}

/** Known blocks are checked field by field; other types pass the guard. */
export type ContentBlock =
  | TextBlock
  | ImageBlock
  | ToolUseBlock
  | ToolResultBlock
  | ReasoningBlock
  | {
      type: string;
    };

/**
 * `context`: when a request's estimated tokens would pass `compactAt`
 * of the window (less the room kept for the reply), the conversation is
 * compacted first (`llm/context_window.py`); `keepTurns` turns at its end are
 * kept as they are (default: as many as fit in a share of the window).
 */
export interface ContextConfig {
  strategy?: 'summarize' | 'sliding-window' | 'off';
  compactAt?: number;
  keepTurns?: number | null;
}

/** What runs cost, from the agent's prices (`core/cost.py`). */
export interface Cost {
  amount: number;
  currency: 'USD';
}

/**
 * An event of an agent this run handed a task to with its `delegate`
 * tool, nested whole, between that call's `tool_use` and `tool_result`.
 */
export interface DelegateEvent {
  type: 'delegate';
  data: Delegated;
}

/**
 * An event of a delegate's run, under the `delegate` tool call that
 * started it: the call's `toolUseId`, the delegate's name, and its event
 * as it streamed it (a delegate's own delegation nests one level more).
 */
export interface Delegated {
  toolUseId: string;
  agent: string;
  event:
    | TextEvent
    | ReasoningEvent
    | ToolUseEvent
    | ToolOutputEvent
    | ToolResultEvent
    | PermissionEvent
    | PlanEvent
    | DelegateEvent
    | ErrorEvent
    | McpFilteredEvent
    | AcpUpdateEvent
    | AuthenticatedEvent
    | SessionRestartedEvent
    | ModelFallbackEvent
    | CompactionStartedEvent
    | CompactionEvent
    | CompactionFailedEvent;
}

/**
 * `delegation`: the bounds on the tasks this agent's runs hand on
 * with the `delegate` tool. `maxDepth`: the levels of delegation that
 * may go on beneath one of its runs (a delegate of a delegate is level 2);
 * `maxCalls`: the delegations a run a client started, and every run
 * beneath it, may make in all.
 */
export interface DelegationConfig {
  maxDepth?: number;
  maxCalls?: number;
}

/**
 * The last event of `Agent.stream`: the run's result. Not emitted while
 * the run runs, so not sent as `$/progress`: the answer carries it.
 */
export interface DoneEvent {
  type: 'done';
  data: AgentRunResult;
}

/** A turn sliding-window dropped: where it began and the start of its prompt. */
export interface DroppedTurn {
  message: number;
  text: string;
}

/** A failed run's error, the last event before the answer. */
export interface ErrorEvent {
  type: 'error';
  data: RunError;
}

export interface ErrorInfo {
  kind:
    | 'provider'
    | 'auth'
    | 'connection'
    | 'timeout'
    | 'stream'
    | 'malformed'
    | 'unsupported'
    | 'unsupported_block'
    | 'context_too_long'
    | 'internal'
    | 'callback'
    | 'input'
    | 'output_schema'
    | 'output_limit'
    | 'mcp'
    | 'store'
    | 'disposed'
    | 'plan'
    | 'spawn'
    | 'process'
    | 'protocol'
    | 'acp'
    | 'config'
    | 'refusal'
    | 'max_tokens'
    | 'max_turn_requests'
    | 'budget'
    | 'loop'
    | 'executor'
    | 'delegation';
  message: string;
}

export interface EvaluationConfig {
  sample?: number;
  storePayloads?: 'none' | 'redacted' | 'full';
  scorers?: Array<
    | LengthScorer
    | ContainsScorer
    | RegexScorer
    | JsonScorer
    | JudgeScorer
    | ClientScorer>;
  maxConcurrent?: number;
  maxQueueLength?: number;
  timeoutMs?: number;
}

export interface EvaluationRecord {
  id: number;
  runId: string;
  agent: string;
  scorer: string;
  score: number | null;
  reason: string | null;
  input: string | null;
  output: string | null;
  createdAt: number;
  metadata: Record<string, unknown>;
}

export interface HooksConfig {
  beforeRun?: boolean;
  afterRun?: boolean;
  timeoutMs?: number;
}

/**
 * The providers' HTTP client; it is shared by every session of the host
 * process (`providers/http_settings.py`). A field left out keeps its default.
 */
export interface HttpOptions {
  /** "aiohttp" (default), or "httpx" for its own transport */
  transport?: 'aiohttp' | 'httpx' | null;
  /** connections open at once (default 1000) */
  maxConnections?: number | null;
  /** idle connections kept (httpx transport) (default 100) */
  maxKeepAliveConnections?: number | null;
  /** connecting, TLS included (default 10000) */
  connectTimeoutMs?: number | null;
  /** longest wait for response bytes (default 300000) */
  readTimeoutMs?: number | null;
  /** longest wait for the provider to take request bytes (default 60000) */
  writeTimeoutMs?: number | null;
  /** longest wait for a free connection (default 30000) */
  poolTimeoutMs?: number | null;
}

export interface ImageBlock {
  type: 'image';
  source: MediaSourceBase64;
}

export interface InitializationOptions {
  defaults?: ModelDefaults | null;
  http?: HttpOptions | null;
  telemetry?: TelemetryOptions | null;
  evaluation?: EvaluationConfig | null;
  stateDir?: string | null;
  /** over TCP: the token from the host's token file (ignored on stdio) */
  authToken?: string | null;
}

export interface JsonScorer {
  name?: string | null;
  kind: 'json';
  schema?: Record<string, unknown> | null;
}

export interface JudgeScorer {
  name?: string | null;
  kind: 'judge';
  config: Record<string, unknown>;
  criteria: string;
}

export interface LLMMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

export interface LengthScorer {
  name?: string | null;
  kind: 'length';
  min?: number | null;
  max?: number | null;
}

/** Every member runs in the host (the default). */
export interface LocalExecutor {
  kind: 'local';
}

/**
 * `loopDetection`: a tool call identical to the ones just before it
 * (same tool, equal JSON input), made `maxRepeats` times in a row, is not
 * run but answered with a warning; one more ends the run (`loop`).
 */
export interface LoopDetectionConfig {
  maxRepeats?: number;
}

/** An MCP server a wrapped ACP agent cannot take, left out of `session/new`. */
export interface McpFiltered {
  name: string;
  type: string;
  reason: string;
}

/** An MCP server left out, in the first run of an ACP agent's session. */
export interface McpFilteredEvent {
  type: 'mcp_filtered';
  data: McpFiltered;
}

/** An MCP server reached over streamable HTTP (ACP's `McpServerHttp`). */
export interface McpServerHttp {
  type: 'http';
  name: string;
  url: string;
  headers?: NameValue[];
}

/** An MCP server the host starts as a subprocess (ACP's `McpServerStdio`). */
export interface McpServerStdio {
  name: string;
  command: string;
  args?: string[];
  env?: NameValue[];
}

export interface MediaSourceBase64 {
  type: 'base64';
  media_type: string;
  data: string;
}

export interface MediaSourceUrl {
  type: 'url';
  media_type: string;
  url: string;
}

/** `initializationOptions.defaults`: applied to configs that leave them out. */
export interface ModelDefaults {
  model?: string | null;
  provider?: string | null;
  baseURL?: string | null;
}

/**
 * An LLM agent's model failed a turn (an overload, a rate limit or a
 * server error, after its retries); `model`, the next of its
 * `fallbackModels`, is asked instead.
 */
export interface ModelFallback {
  failed: string;
  model: string;
  status: number;
  message: string;
}

/** The turn goes on with a fallback model. */
export interface ModelFallbackEvent {
  type: 'model_fallback';
  data: ModelFallback;
}

/**
 * One model of a provider's list (`models/list`); typing_extensions'
 * TypedDict, which pydantic reads on Python 3.11.
 */
export interface ModelInfo {
  id: string;
  displayName?: string;
  ownedBy?: string;
  created?: string | number;
}

/** An environment variable or an HTTP header, as ACP writes them. */
export interface NameValue {
  name: string;
  value: string;
}

/** A permission decision, before the tool call it decides. */
export interface PermissionEvent {
  type: 'permission';
  data: ToolPermission | AcpPermission;
}

/**
 * One rule of `permissions`: the first rule whose `tool` (a name or a
 * glob such as `fs__*`) and `pattern` (a glob on the call's main
 * argument, its path or command) match decides.
 */
export interface PermissionRule {
  tool: string;
  pattern?: string | null;
  action: 'allow' | 'ask' | 'deny';
}

/**
 * The tool call a permission rule asks about; `target` is its main
 * argument (path or command).
 */
export interface PermissionTool {
  name: string;
  input: Record<string, unknown>;
  target?: string;
}

/** The whole plan, as the agent's `update_plan` call gave it. */
export interface Plan {
  entries: PlanEntry[];
}

/** One step of an agent's plan (ACP's `PlanEntry`). */
export interface PlanEntry {
  content: string;
  priority: 'high' | 'medium' | 'low';
  status: 'pending' | 'in_progress' | 'completed';
}

/** The agent's plan, whole, each time it changes (the `update_plan` tool). */
export interface PlanEvent {
  type: 'plan';
  data: Plan;
}

export interface PlannedTask {
  id: string;
  title: string;
  assignee: string;
  dependsOn: string[];
}

/**
 * `pricing`: the model's prices in US dollars per million tokens; the
 * cache's writes and reads cost the input price unless given.
 */
export interface PricingConfig {
  input: number;
  output: number;
  cacheWrite?: number | null;
  cacheRead?: number | null;
}

export interface ProcessBackend {
  kind: 'process';
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string | null;
  maxOutputBytes?: number;
  input?: 'stdin' | 'argument' | 'none';
  terminal?: boolean;
}

export type PromptInput = string | ContentBlock[];

/**
 * External members (and LLM members with `placement: "ray"`) run as
 * Ray tasks on the cluster at `address`.
 */
export interface RayExecutor {
  kind: 'ray';
  /** the cluster's GCS address, host:port (default: RAY_ADDRESS) */
  address?: string | null;
  /** Ray's runtime environment for every task (pip, env_vars, working_dir...) */
  runtimeEnv?: Record<string, unknown> | null;
  /** every task's resources, under a task's own */
  resources?: TaskResources | null;
  /** where LLM members run: "host" (default) or "ray" */
  placement?: 'host' | 'ray';
}

export interface ReasoningBlock {
  type: 'reasoning';
  text: string;
  signature?: string;
  redactedData?: string;
}

/** A delta of the model's (or an ACP agent's) reasoning. */
export interface ReasoningEvent {
  type: 'reasoning';
  data: string;
}

export interface RegexScorer {
  name?: string | null;
  kind: 'regex';
  pattern: string;
}

/**
 * What restoring the workspace did, as absolute paths: `restored`,
 * files put back as they were; `removed`, files created since;
 * `leftAlone`, files changed outside the agent since its last turn,
 * left as they are; `notRecorded`, files that differ but that the
 * checkpoint left out (too large, or past its bounds).
 */
export interface RewoundFiles {
  restored: string[];
  removed: string[];
  leftAlone: string[];
  notRecorded: string[];
}

/** Why a streaming run failed: its `status.message` and `errorInfo.kind`. */
export interface RunError {
  message: string;
  kind?: string;
}

/** An event a run streams while it runs: every StreamEvent but done. */
export type RunEvent =
  | TextEvent
  | ReasoningEvent
  | ToolUseEvent
  | ToolOutputEvent
  | ToolResultEvent
  | PermissionEvent
  | PlanEvent
  | DelegateEvent
  | ErrorEvent
  | McpFilteredEvent
  | AcpUpdateEvent
  | AuthenticatedEvent
  | SessionRestartedEvent
  | ModelFallbackEvent
  | CompactionStartedEvent
  | CompactionEvent
  | CompactionFailedEvent;

export type RunInput = string | LLMMessage[];

export interface RunStatus {
  code: 'ok' | 'error' | 'cancelled' | 'timeout' | 'budget_exhausted';
  message?: string;
}

/**
 * The OS sandbox an LLM agent's `shell` commands run in (`mode`,
 * never `off`): `confinedBy`, the tool that confines them on this
 * machine, or `unavailable`, why none can (the commands then ask and run
 * unconfined, as without a sandbox).
 */
export interface SandboxState {
  mode: 'off' | 'workspace-write' | 'read-only';
  confinedBy?: 'bwrap' | 'landlock';
  unavailable?: string;
}

export interface ServerInfo {
  name: string;
  version: string;
}

/** The stored ACP session could not be resumed; a new one was opened. */
export interface SessionRestarted {
  previous: string;
  sessionId: string;
  reason: string;
}

/** An ACP agent's stored session was replaced by a new one. */
export interface SessionRestartedEvent {
  type: 'session_restarted';
  data: SessionRestarted;
}

/** An event of a run's stream, which ends with done (the result). */
export type StreamEvent =
  | TextEvent
  | ReasoningEvent
  | ToolUseEvent
  | ToolOutputEvent
  | ToolResultEvent
  | PermissionEvent
  | PlanEvent
  | DelegateEvent
  | ErrorEvent
  | McpFilteredEvent
  | AcpUpdateEvent
  | AuthenticatedEvent
  | SessionRestartedEvent
  | ModelFallbackEvent
  | CompactionStartedEvent
  | CompactionEvent
  | CompactionFailedEvent
  | DoneEvent;

export interface TaskOutcome {
  id: string;
  title: string;
  assignee: string;
  status: 'completed' | 'failed' | 'skipped';
  result?: AgentRunResult;
  reason?: string;
}

/**
 * A task; `id` defaults to `task-N` (N counting from 1) and
 * `assignee` to the team's agents in turn.
 */
export interface TaskParams {
  id?: string | null;
  title: string;
  description: string;
  assignee?: string | null;
  dependsOn?: string[];
  /** what the task holds on a node (executor.kind "ray") */
  resources?: TaskResources | null;
}

/** What one task holds on a node while it runs (Ray's task resources). */
export interface TaskResources {
  /** CPUs (default 1: a member is a process of its own) */
  numCpus?: number | null;
  /** GPUs */
  numGpus?: number | null;
  /** bytes of memory */
  memory?: number | null;
  /**
   * custom resources by name, as the nodes declare them (e.g. {"repo-checkout": 1} for the nodes that have
   * the repository)
   */
  custom?: Record<string, number> | null;
}

export interface TeamParams {
  agents: AgentConfig[];
  sharedMemory?: boolean;
  maxConcurrency?: number;
  maxTokenBudget?: number | null;
  coordinator?: AgentConfig | null;
}

/**
 * Export the session's spans over OTLP/HTTP (docs/telemetry.md). Given
 * (even empty), export is on unless `export` is false or
 * `OTEL_SDK_DISABLED=true`; a field left out is read from the `OTEL_*`
 * variables as the SDK reads them.
 */
export interface TelemetryOptions {
  /**
   * false: no export for this session, whatever the OTEL_* variables say (the runs are still recorded in the
   * state directory; the other fields are not used); true or left out: export (OTEL_SDK_DISABLED=true still
   * turns it off)
   */
  export?: boolean | null;
  /**
   * the collector's OTLP/HTTP base URL; spans go to {endpoint}/v1/traces (default:
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)
   */
  endpoint?: string | null;
  /**
   * HTTP headers sent with every export, over those of OTEL_EXPORTER_OTLP_HEADERS (an authorization token,
   * say: never logged)
   */
  headers?: Record<string, string> | null;
  /** the resource's service.name (default: OTEL_SERVICE_NAME, else oma-host) */
  serviceName?: string | null;
  /**
   * record message text in span attributes, redacted and bounded (default:
   * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)
   */
  captureContent?: boolean | null;
}

export interface TextBlock {
  type: 'text';
  text: string;
}

/** A delta of the output text. */
export interface TextEvent {
  type: 'text';
  data: string;
}

/**
 * `thinking`: the model reasons before it answers, at an `effort` or
 * within `budgetTokens`; each provider adapter maps it to its own form.
 */
export interface ThinkingConfig {
  effort?: 'low' | 'medium' | 'high' | null;
  budgetTokens?: number | null;
}

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  reasoning_tokens?: number;
}

export interface ToolCallRecord {
  toolName: string;
  input: Record<string, unknown>;
  output: string;
  duration: number;
  permission?: ToolPermission;
}

/**
 * A running tool call's output, before its result: the text as it
 * comes, or the editor's terminal that shows it.
 */
export interface ToolOutputEvent {
  type: 'tool_output';
  data: ToolOutputText | ToolOutputTerminal;
}

/**
 * The editor's terminal a tool call runs in, which shows its output
 * live (the shell, behind the ACP door of an editor with terminals).
 */
export interface ToolOutputTerminal {
  toolUseId: string;
  terminalId: string;
}

/**
 * A piece of a running tool call's output, as it comes (the shell's
 * stdout and stderr, interleaved; pieces gathered for up to 0.1 s).
 */
export interface ToolOutputText {
  toolUseId: string;
  text: string;
}

/**
 * The permission policy's decision on one tool call (an LLM agent's
 * tools, and an ACP agent's `fs/write_text_file` as the tool `file_write`).
 */
export interface ToolPermission {
  toolUseId: string;
  tool: string;
  target?: string;
  action: 'allow' | 'ask' | 'deny';
  rule: number | null;
  decision: 'allow' | 'deny';
  by:
    | 'rule'
    | 'default'
    | 'mode'
    | 'client'
    | 'session'
    | 'no_client'
    | 'timeout'
    | 'client_error'
    | 'bad_answer';
  scope?: 'once' | 'session';
  message?: string;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string | Array<ToolResultTextPart | ToolResultImagePart | ToolResultFilePart>;
  is_error?: boolean;
}

/** A tool call's result. */
export interface ToolResultEvent {
  type: 'tool_result';
  data: ToolResultBlock;
}

export interface ToolResultFilePart {
  type: 'file';
  filename: string;
  source: MediaSourceBase64 | MediaSourceUrl;
}

export interface ToolResultImagePart {
  type: 'image';
  source: MediaSourceBase64 | MediaSourceUrl;
}

export interface ToolResultTextPart {
  type: 'text';
  text: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** A tool call starting. */
export interface ToolUseEvent {
  type: 'tool_use';
  data: ToolUseBlock;
}

export interface WorkDoneBegin {
  kind: 'begin';
  title: string;
}

export interface WorkDoneEnd {
  kind: 'end';
  message: string;
}

export interface WorkDoneReport {
  kind: 'report';
  message: string;
}

/** LSP's initialize params, of which `initializationOptions` is ours to check. */
export interface LspInitializeParams {
  /** as in LSP */
  processId?: unknown;
  /** as in LSP */
  capabilities?: unknown;
  initializationOptions?: InitializationOptions | null;
  [field: string]: unknown;
}

export interface InitializeResult {
  capabilities: Capabilities;
  serverInfo: ServerInfo;
}

export interface CreateParams {
  config: AgentConfig;
  sessionId?: string | null;
}

export interface CreateResult {
  agentId: string;
}

export interface RunParams {
  agentId: string;
  input: RunInput;
  runId?: string | null;
  workDoneToken?: number | string | null;
  partialResultToken?: number | string | null;
}

export interface StreamParams {
  agentId: string;
  input: RunInput;
  runId?: string | null;
  workDoneToken?: number | string | null;
  partialResultToken: number | string;
}

export interface PromptParams {
  agentId: string;
  input: PromptInput;
  runId?: string | null;
  workDoneToken?: number | string | null;
  partialResultToken?: number | string | null;
}

export interface AgentIdParams {
  agentId: string;
}

export interface HistoryResult {
  messages: LLMMessage[];
}

export interface AgentStateResult {
  configOptions?: Array<Record<string, unknown>>;
  modes?: Record<string, unknown>;
  models?: Record<string, unknown>;
  status: 'idle' | 'running' | 'completed' | 'error';
  tokenUsage: TokenUsage;
  cost?: Cost;
  sandbox?: SandboxState;
}

export interface ConfigureParams {
  agentId: string;
  /** a configOptions id, or mode / model for an agent with only modes / models */
  configId: string;
  /** a value id of that option (a boolean option: a boolean) */
  value: string | boolean;
}

/**
 * An ACP agent's session choices, in the agent's own wire form (ACP
 * `SessionConfigOption`, `SessionModeState`, `SessionModelState`).
 */
export interface AgentChoicesResult {
  configOptions?: Array<Record<string, unknown>>;
  modes?: Record<string, unknown>;
  models?: Record<string, unknown>;
}

/**
 * `compacted`: whether the history was compacted; then `compaction`
 * says how (the `compaction` event's data), else `reason` says why
 * not. `tokenUsage` (and `cost`, when prices are known) is what the
 * summary cost.
 */
export interface CompactResult {
  compacted: boolean;
  compaction?: Compaction;
  reason?: string;
  tokenUsage: TokenUsage;
  cost?: Cost;
}

export interface RewindParams {
  agentId: string;
  /**
   * the turns kept from the start; the conversation is cut back to before the next one (less than the turns
   * the history holds)
   */
  keepTurns: number;
  /** also put the workspace back as it was before the first turn cut */
  restoreFiles?: boolean;
}

/**
 * `keptTurns` and `removedTurns`: the turns kept and cut;
 * `messages`: the messages the history holds now; `files`: what
 * restoring the workspace did (with `restoreFiles` only).
 */
export interface RewindResult {
  keptTurns: number;
  removedTurns: number;
  messages: number;
  files?: RewoundFiles;
}

/** An empty object (or no params at all). */
export type NoParams = Record<string, never>;

export interface AgentListResult {
  agents: AgentListEntry[];
}

export interface RunAgentParams {
  config: AgentConfig;
  input: RunInput;
  progress?: boolean;
  runId?: string | null;
  metadata?: Record<string, unknown> | null;
  workDoneToken?: number | string | null;
}

export interface RunTasksParams {
  team: TeamParams;
  tasks: TaskParams[];
  /**
   * where the members run: {"kind": "local"} (default, in the host) or {"kind": "ray", ...} (on a Ray
   * cluster)
   */
  executor?: LocalExecutor | RayExecutor | null;
  progress?: boolean;
  runId?: string | null;
  workDoneToken?: number | string | null;
}

export interface TeamResult {
  success: boolean;
  output: string;
  tasks: TaskOutcome[];
  tokenUsage: TokenUsage;
  identity: { [key in 'runId']?: string };
  plan?: PlannedTask[];
  errorInfo?: ErrorInfo;
}

export interface RunTeamParams {
  team: TeamParams;
  goal: string;
  progress?: boolean;
  runId?: string | null;
  workDoneToken?: number | string | null;
}

export interface EvaluationStats {
  sampled: number;
  enqueued: number;
  completed: number;
  dropped: number;
  failed: number;
  storeFailed: number;
}

export interface FlushParams {
  timeoutMs?: number | null;
}

export interface FlushResult {
  sampled: number;
  enqueued: number;
  completed: number;
  dropped: number;
  failed: number;
  storeFailed: number;
  settled: boolean;
}

export interface RecordsParams {
  runId?: string | null;
  limit?: number;
}

export interface RecordsResult {
  records: EvaluationRecord[];
}

export interface ModelsListParams {
  /** default: initializationOptions.defaults.provider, or anthropic */
  provider?: string | null;
  /**
   * default: the defaults' baseURL for that provider, else the provider's variable (ANTHROPIC_BASE_URL...),
   * else its own endpoint
   */
  baseURL?: string | null;
  /** the variable holding the key (default: the provider's standard one) */
  apiKeyEnv?: string | null;
}

export interface ModelsListResult {
  provider: string;
  models: ModelInfo[];
}

/**
 * Sent after validation and before the backend runs, when the config has
 * `hooks.beforeRun`: `messages` is the complete effective input, `prompt`
 * the text of the latest user message, `agent` the config without hooks or
 * secrets. Answer `null` to change nothing.
 */
export interface BeforeRunParams {
  agentName: string;
  runId: string;
  prompt: string;
  messages: LLMMessage[];
  agent: Record<string, unknown>;
}

/**
 * Sent when a run finishes (not when it was cancelled), when the config has
 * `hooks.afterRun`; the answer replaces the result (`null`: unchanged).
 */
export interface AfterRunParams {
  agentName: string;
  runId: string;
  result: AgentRunResult;
}

/**
 * Asks to use a tool: an ACP agent with `permission: "ask-client"`
 * (`source: "acp"`), or an LLM agent's tool call whose permission rule
 * says `ask` (`source: "tool"`, with `tool`).
 */
export interface PermissionParams {
  agentName: string;
  runId?: string;
  title: string;
  kind: string | null;
  optionKinds: string[];
  source?: 'acp' | 'tool';
  tool?: PermissionTool;
}

/**
 * `scope: "session"` (Always this session) allows the same tool under
 * the same rule for the rest of the agent's life (a path: that file only;
 * a command line: that line only; a protected place: never kept);
 * missing means `once`.
 */
export interface PermissionAnswer {
  approve: boolean;
  scope?: 'once' | 'session';
}

/**
 * LSP's `workspace/applyEdit`: an LLM agent's `file_write` or
 * `file_edit`, sent only to a client that declared
 * `capabilities.workspace.applyEdit`; `edit` is a WorkspaceEdit with
 * `documentChanges` (a CreateFile for a new file, then one TextDocumentEdit).
 */
export interface ApplyEditParams {
  label: string;
  edit: Record<string, unknown>;
}

export interface ApplyEditAnswer {
  applied: boolean;
  failureReason?: string;
}

/**
 * A client scorer's turn in online evaluation; `input` and `output` follow
 * `storePayloads`.
 */
export interface ScoreParams {
  scorer: string;
  runId: string;
  input: string;
  output: string;
}

export interface ScoreAnswer {
  score: number;
  reason?: string;
}

/**
 * A stream event for `partialResultToken`, or LSP work-done progress
 * for `workDoneToken`.
 */
export interface ProgressParams {
  token: number | string;
  value: RunEvent | WorkDoneBegin | WorkDoneReport | WorkDoneEnd;
}

/**
 * Progress of `oma/runAgent`, `oma/runTasks` and `oma/runTeam` with
 * `progress: true`.
 */
export interface OmaProgressParams {
  runId: string;
  type:
    | 'agent_start'
    | 'agent_complete'
    | 'budget_exceeded'
    | 'task_start'
    | 'task_complete'
    | 'task_skipped'
    | 'plan';
  agent: string | null;
  data: unknown;
}

/** Each method's params and result (docs/protocol.md, "Methods"). */
export interface Methods {
  initialize: { params: LspInitializeParams; result: InitializeResult };
  shutdown: { params: null; result: null };
  'agent/create': { params: CreateParams; result: CreateResult };
  'agent/run': { params: RunParams; result: AgentRunResult };
  'agent/stream': { params: StreamParams; result: AgentRunResult };
  'agent/prompt': { params: PromptParams; result: AgentRunResult };
  'agent/history': { params: AgentIdParams; result: HistoryResult };
  'agent/state': { params: AgentIdParams; result: AgentStateResult };
  'agent/configure': { params: ConfigureParams; result: AgentChoicesResult };
  'agent/reset': { params: AgentIdParams; result: null };
  'agent/compact': { params: AgentIdParams; result: CompactResult };
  'agent/rewind': { params: RewindParams; result: RewindResult };
  'agent/dispose': { params: AgentIdParams; result: null };
  'agent/list': { params: NoParams; result: AgentListResult };
  'oma/runAgent': { params: RunAgentParams; result: AgentRunResult };
  'oma/runTasks': { params: RunTasksParams; result: TeamResult };
  'oma/runTeam': { params: RunTeamParams; result: TeamResult };
  'oma/evaluation/stats': { params: NoParams; result: EvaluationStats };
  'oma/evaluation/flush': { params: FlushParams; result: FlushResult };
  'oma/evaluation/records': { params: RecordsParams; result: RecordsResult };
  'models/list': { params: ModelsListParams; result: ModelsListResult };
}

/** Each request the host sends the client, and the client's answer. */
export interface ServerRequests {
  'agent/beforeRun': { params: BeforeRunParams; result: BeforeRunAnswer | null };
  'agent/afterRun': { params: AfterRunParams; result: AgentRunResult | null };
  'agent/requestPermission': { params: PermissionParams; result: PermissionAnswer };
  'workspace/applyEdit': { params: ApplyEditParams; result: ApplyEditAnswer };
  'oma/evaluation/score': { params: ScoreParams; result: ScoreAnswer };
}

/** Each notification the host sends, and its params. */
export interface Notifications {
  '$/progress': ProgressParams;
  'oma/progress': OmaProgressParams;
}

/** The JSON-RPC error codes the host answers with (docs/protocol.md, "Errors"). */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  AgentNotFound: -32001,
  ServerNotInitialized: -32002,
  ProviderError: -32003,
  BackendError: -32004,
  RequestCancelled: -32800,
} as const;
