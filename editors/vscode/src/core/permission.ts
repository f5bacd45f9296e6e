/**
 * The permission question: `agent/requestPermission` as a modal with
 * "Allow once" / "Always this session" / "Deny", and the button picked back
 * into the answer `{approve, scope}`.
 *
 * Two sources ask (docs/protocol.md, "Hooks and other requests to the client"):
 * - `source: "acp"` (or no source, as older hosts send): a wrapped ACP agent
 *   with `permission: "ask-client"`; only the decisions it offers in
 *   `optionKinds` become buttons ("Always this session" selects its
 *   `allow_always`).
 * - `source: "tool"`: the host's permission policy asks about one tool call
 *   (`tool: {name, input, target?}`); all three buttons are offered, and
 *   "Always this session" lets the host allow that tool for the rest of the
 *   agent's session.
 *
 * Dismissing the modal, or an answer we do not know, denies.
 */

import type { PermissionAnswer, PermissionParams } from './protocol';

/** "once" (the default) or "session": allow the same tool until the agent is disposed. */
export type PermissionScope = NonNullable<PermissionAnswer['scope']>;

export const ALLOW_ONCE = 'Allow once';
export const ALLOW_SESSION = 'Always this session';
export const DENY = 'Deny';

export interface PermissionChoice {
  label: string;
  approve: boolean;
  scope?: PermissionScope;
}

export interface PermissionPrompt {
  /** The modal's main line. */
  message: string;
  /** The modal's detail text. */
  detail: string;
  /** Buttons, in order; dismissing the modal denies. */
  choices: PermissionChoice[];
}

/** Asks the person; resolves to the label picked, or undefined when dismissed. */
export type PermissionAsker = (prompt: PermissionPrompt) => Promise<string | undefined>;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks the request's shape; throws a message naming the bad field. */
export function parsePermissionRequest(params: unknown): PermissionParams {
  const where = 'agent/requestPermission';
  if (!isObject(params)) {
    throw new Error(`${where}: params must be an object`);
  }
  const { agentName, title, kind, optionKinds, source, tool, runId } = params;
  if (typeof agentName !== 'string') {
    throw new Error(`${where}: agentName must be a string`);
  }
  if (typeof title !== 'string') {
    throw new Error(`${where}: title must be a string`);
  }
  if (kind !== undefined && kind !== null && typeof kind !== 'string') {
    throw new Error(`${where}: kind must be a string or null`);
  }
  if (!Array.isArray(optionKinds) || !optionKinds.every((k) => typeof k === 'string')) {
    throw new Error(`${where}: optionKinds must be an array of strings`);
  }
  if (source !== undefined && source !== 'acp' && source !== 'tool') {
    throw new Error(`${where}: source must be "acp" or "tool", not ${JSON.stringify(source)}`);
  }
  if (runId !== undefined && typeof runId !== 'string') {
    throw new Error(`${where}: runId must be a string`);
  }
  const request: PermissionParams = {
    agentName,
    title,
    kind: (kind as string | undefined) ?? null,
    optionKinds,
    source: source ?? 'acp',
  };
  if (runId !== undefined) {
    request.runId = runId;
  }
  if (tool !== undefined) {
    if (!isObject(tool) || typeof tool.name !== 'string') {
      throw new Error(`${where}: tool must be an object with a string name`);
    }
    if (!isObject(tool.input)) {
      throw new Error(`${where}: tool.input must be an object`);
    }
    if (tool.target !== undefined && typeof tool.target !== 'string') {
      throw new Error(`${where}: tool.target must be a string`);
    }
    request.tool = { name: tool.name, input: tool.input, ...(tool.target !== undefined && { target: tool.target }) };
  } else if (request.source === 'tool') {
    throw new Error(`${where}: a request with source "tool" must name the tool (tool.name)`);
  }
  return request;
}

/** A short, one-line view of a tool's input for the modal's detail. */
function describeInput(input: Record<string, unknown>): string {
  const text = JSON.stringify(input);
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/** The modal for a request. */
export function permissionPrompt(request: PermissionParams): PermissionPrompt {
  const kind = request.kind ? ` (${request.kind})` : '';
  const message = `Agent "${request.agentName}" asks permission: ${request.title}${kind}`;
  if (request.source === 'tool') {
    const tool = request.tool;
    const target = tool?.target !== undefined ? ` on ${tool.target}` : '';
    return {
      message,
      detail:
        `Tool ${tool?.name ?? '?'}${target}, input ${describeInput(tool?.input ?? {})}. ` +
        `"${ALLOW_SESSION}" allows this tool for the rest of the agent's session. Dismissing this question denies.`,
      choices: [
        { label: ALLOW_ONCE, approve: true, scope: 'once' },
        { label: ALLOW_SESSION, approve: true, scope: 'session' },
        { label: DENY, approve: false },
      ],
    };
  }
  const offered = request.optionKinds;
  const choices: PermissionChoice[] = [];
  if (offered.includes('allow_once')) {
    choices.push({ label: ALLOW_ONCE, approve: true, scope: 'once' });
  }
  if (offered.includes('allow_always')) {
    choices.push({ label: ALLOW_SESSION, approve: true, scope: 'session' });
  }
  if (offered.includes('reject_once') || offered.includes('reject_always')) {
    choices.push({ label: DENY, approve: false });
  }
  const allows = choices.some((choice) => choice.approve);
  return {
    message,
    detail:
      `The agent offers: ${offered.length ? offered.join(', ') : 'none'}.` +
      (allows ? '' : ' It offers no way to allow this.') +
      ' Dismissing this question denies.',
    choices,
  };
}

/** The answer for the label picked; anything else (dismissed, unknown) denies. */
export function permissionAnswer(prompt: PermissionPrompt, picked: string | undefined): PermissionAnswer {
  const choice = prompt.choices.find((c) => c.label === picked);
  if (choice === undefined || !choice.approve) {
    return { approve: false };
  }
  return { approve: true, scope: choice.scope ?? 'once' };
}

/** The whole server-to-client request: parse, ask, answer. */
export async function answerPermission(params: unknown, ask: PermissionAsker): Promise<PermissionAnswer> {
  const prompt = permissionPrompt(parsePermissionRequest(params));
  return permissionAnswer(prompt, await ask(prompt));
}
