/**
 * Permission prompt mapping for ACP agents with `permission: "ask-client"`.
 *
 * The host sends `agent/requestPermission {agentName, title, kind, optionKinds}`
 * and follows `{approve: bool}`: approve picks `allow_once`, else
 * `allow_always`; reject picks `reject_once`, else `reject_always`. This module
 * turns the request into a modal question whose buttons are only the choices
 * the agent actually offers, and the picked button (or a dismissed dialog,
 * which rejects) back into the answer.
 */

import type { PermissionAnswer, PermissionRequest } from './protocol';

export interface PermissionChoice {
  label: string;
  approve: boolean;
}

export interface PermissionPrompt {
  /** The modal's main line. */
  message: string;
  /** The modal's detail text. */
  detail: string;
  /** Buttons, in order; dismissing the modal rejects. */
  choices: PermissionChoice[];
}

/** Asks the person; resolves to the label picked, or undefined when dismissed. */
export type PermissionAsker = (prompt: PermissionPrompt) => Promise<string | undefined>;

/** Checks the request's shape; throws a message naming the bad field. */
export function parsePermissionRequest(params: unknown): PermissionRequest {
  if (typeof params !== 'object' || params === null) {
    throw new Error('agent/requestPermission: params must be an object');
  }
  const raw = params as Record<string, unknown>;
  const { agentName, title, kind, optionKinds } = raw;
  if (typeof agentName !== 'string') {
    throw new Error('agent/requestPermission: agentName must be a string');
  }
  if (typeof title !== 'string') {
    throw new Error('agent/requestPermission: title must be a string');
  }
  if (kind !== undefined && kind !== null && typeof kind !== 'string') {
    throw new Error('agent/requestPermission: kind must be a string or null');
  }
  if (!Array.isArray(optionKinds) || !optionKinds.every((k) => typeof k === 'string')) {
    throw new Error('agent/requestPermission: optionKinds must be an array of strings');
  }
  return { agentName, title, kind: (kind as string | undefined) ?? null, optionKinds };
}

function which(optionKinds: string[], once: string, always: string): string | undefined {
  if (optionKinds.includes(once)) {
    return 'once';
  }
  return optionKinds.includes(always) ? 'always' : undefined;
}

/** The modal for a request: one button per decision the agent offers. */
export function permissionPrompt(request: PermissionRequest): PermissionPrompt {
  const choices: PermissionChoice[] = [];
  const allow = which(request.optionKinds, 'allow_once', 'allow_always');
  const reject = which(request.optionKinds, 'reject_once', 'reject_always');
  if (allow !== undefined) {
    choices.push({ label: allow === 'once' ? 'Allow' : 'Allow always', approve: true });
  }
  if (reject !== undefined) {
    choices.push({ label: reject === 'once' ? 'Reject' : 'Reject always', approve: false });
  }
  const kind = request.kind ? ` (${request.kind})` : '';
  const offered = request.optionKinds.length ? request.optionKinds.join(', ') : 'none';
  return {
    message: `Agent "${request.agentName}" asks permission: ${request.title}${kind}`,
    detail:
      `The agent offers: ${offered}.` +
      (allow === undefined ? ' It offers no way to allow this.' : '') +
      ' Dismissing this question rejects.',
    choices,
  };
}

/** The answer for the label picked; anything else (dismissed, unknown) rejects. */
export function permissionAnswer(prompt: PermissionPrompt, picked: string | undefined): PermissionAnswer {
  const choice = prompt.choices.find((c) => c.label === picked);
  return { approve: choice?.approve ?? false };
}

/** The whole server-to-client request: parse, ask, answer. */
export async function answerPermission(params: unknown, ask: PermissionAsker): Promise<PermissionAnswer> {
  const prompt = permissionPrompt(parsePermissionRequest(params));
  return permissionAnswer(prompt, await ask(prompt));
}
