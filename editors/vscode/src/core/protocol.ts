/**
 * The oma-host wire types this client uses (docs/protocol.md, "Data types",
 * "Runs and their results", "External backends", "Cancellation and progress",
 * "Methods").
 *
 * Field names follow the wire exactly: camelCase protocol params, and the seed
 * data types' own names (`media_type`, `input_tokens`, `is_error`).
 */

export interface TextBlock {
  type: 'text';
  text: string;
}

export interface ImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string };
}

/** Any other block the host may hand back (tool_use, tool_result, reasoning). */
export interface OtherBlock {
  type: string;
  [field: string]: unknown;
}

export type ContentBlock = TextBlock | ImageBlock | OtherBlock;

export interface LLMMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** agent/run, agent/stream, oma/runAgent. */
export type RunInput = string | LLMMessage[];
/** agent/prompt. */
export type PromptInput = string | ContentBlock[];

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

export type RunStatusCode = 'ok' | 'error' | 'cancelled' | 'timeout' | 'budget_exhausted';

export interface AgentRunResult {
  success: boolean;
  output: string;
  messages: LLMMessage[];
  tokenUsage: TokenUsage;
  toolCalls: { toolName: string; input: unknown; output: string; duration: number }[];
  status: { code: RunStatusCode; message?: string };
  identity: { runId: string };
  structured?: unknown;
  budgetExceeded?: true;
  aborted?: true;
  errorInfo?: { kind: string; message: string };
}

export type StreamEvent =
  | { type: 'text'; data: string }
  | { type: 'reasoning'; data: string }
  | { type: 'tool_use'; data: { id?: string; name?: string; input?: unknown } }
  | { type: 'tool_result'; data: { tool_use_id?: string; content?: unknown; is_error?: boolean } }
  | { type: 'error'; data: { message: string; kind?: string } }
  | { type: 'permission'; data: { title?: string; kind?: string; decision?: string } }
  | {
      type: 'tool_output';
      data: { toolUseId: string; text: string } | { toolUseId: string; terminalId: string };
    }
  | { type: 'delegate'; data: { toolUseId: string; agent: string; event: StreamEvent } }
  | { type: 'model_fallback'; data: { failed: string; model: string; status: number; message: string } }
  | { type: 'compaction'; data: Compaction }
  | { type: string; data?: unknown };

/** A `compaction` event's data: the conversation before and after, and the media the compacted turns held. */
export interface Compaction {
  strategy: 'summarize' | 'sliding-window';
  trigger: 'threshold' | 'too_long' | 'request';
  before: number;
  after: number;
  tokensBefore: number;
  tokensAfter: number;
  images: { kind: 'image' | 'file'; message: number; block: number; mediaType: string }[];
  dropped?: { message: number; text: string }[];
}

/** An AgentConfig as the user wrote it in the settings; the host validates it. */
export interface AgentConfig {
  name: string;
  model?: string;
  provider?: string;
  baseURL?: string;
  backend?: { kind: string; [field: string]: unknown };
  /** Names of agents it may hand tasks to: each the agent of that name created before it. */
  delegates?: unknown;
  [field: string]: unknown;
}

/** One model of `models/list` (the provider's own fields where it has them). */
export interface ModelInfo {
  id: string;
  displayName?: string;
  ownedBy?: string;
  created?: string | number;
}

/** `models/list {provider?, baseURL?, apiKeyEnv?}` and its answer. */
export interface ModelsListParams {
  provider?: string;
  baseURL?: string;
  apiKeyEnv?: string;
}

export interface ModelsListResult {
  provider: string;
  models: ModelInfo[];
}

/** LSP work-done progress values, as the host sends them for a workDoneToken. */
export type WorkDoneValue =
  | { kind: 'begin'; title: string; message?: string }
  | { kind: 'report'; message?: string; percentage?: number }
  | { kind: 'end'; message?: string };

/** `oma/progress` from oma/runAgent with `progress: true`. */
export interface OmaProgressEvent {
  runId: string;
  type: string;
  agent: string;
  data?: unknown;
}

/** `agent/requestPermission` (server to client) and its answer. `source`
 *  is "acp" for a wrapped ACP agent (also when a host omits it), "tool" for
 *  the host's permission policy, which then names the tool call. */
export interface PermissionRequest {
  agentName: string;
  runId?: string;
  title: string;
  kind: string | null;
  optionKinds: string[];
  source: 'acp' | 'tool';
  tool?: { name: string; input: Record<string, unknown>; target?: string };
}

/** "once" (the default) or "session": allow the same tool until the agent is disposed. */
export type PermissionScope = 'once' | 'session';

export interface PermissionAnswer {
  approve: boolean;
  scope?: PermissionScope;
}

export interface InitializationOptions {
  defaults?: { model?: string; provider?: string; baseURL?: string };
  stateDir?: string;
}

export interface InitializeResult {
  capabilities: { agent?: { methods: string[]; providers: string[]; backends: string[] } };
  serverInfo?: { name: string; version: string };
}

/** JSON-RPC error codes the client treats specially (docs/protocol.md, "Errors"). */
export const ErrorCode = {
  InvalidParams: -32602,
  AgentNotFound: -32001,
  RequestCancelled: -32800,
} as const;
