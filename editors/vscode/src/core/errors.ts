/**
 * Error formatting: one readable line per failed request, in the same shape
 * as `oma-host console`: `error -32602 InvalidMessageError at input[0].content[1]: ...`.
 *
 * The JSON path of an InvalidMessageError (`error.data.path`) is shown once,
 * after "at", and stripped from the front of the message where the host
 * repeats it. A cancelled request (-32800) carries the partial result.
 */

import { ErrorCode, type AgentRunResult } from './protocol';

export interface RpcErrorLike {
  code: number;
  message: string;
  data?: unknown;
}

export function isRpcError(error: unknown): error is RpcErrorLike {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as RpcErrorLike).code === 'number' &&
    typeof (error as RpcErrorLike).message === 'string'
  );
}

function errorData(error: RpcErrorLike): Record<string, unknown> {
  return typeof error.data === 'object' && error.data !== null ? (error.data as Record<string, unknown>) : {};
}

/** `data.type` of an oma-host error (InvalidMessageError, InvalidParams, AgentNotFound, ...). */
export function errorType(error: unknown): string | undefined {
  if (!isRpcError(error)) {
    return undefined;
  }
  const kind = errorData(error).type;
  return typeof kind === 'string' ? kind : undefined;
}

/** `data.path` of an InvalidMessageError. */
export function errorPath(error: unknown): string | undefined {
  if (!isRpcError(error)) {
    return undefined;
  }
  const path = errorData(error).path;
  return typeof path === 'string' && path !== '' ? path : undefined;
}

export function isCancelled(error: unknown): boolean {
  return isRpcError(error) && error.code === ErrorCode.RequestCancelled;
}

export function isAgentNotFound(error: unknown): boolean {
  return isRpcError(error) && error.code === ErrorCode.AgentNotFound;
}

/** An InvalidParams answer that refuses `field` (a host that does not know it). */
export function refusesField(error: unknown, field: string): boolean {
  return isRpcError(error) && error.code === ErrorCode.InvalidParams && error.message.includes(field);
}

/** The AgentRunResult so far, from a -32800 RequestCancelled error. */
export function cancelledPartial(error: unknown): AgentRunResult | undefined {
  if (!isCancelled(error)) {
    return undefined;
  }
  const partial = errorData(error as RpcErrorLike).partial;
  return typeof partial === 'object' && partial !== null ? (partial as AgentRunResult) : undefined;
}

/** One line describing any error a request can end with. */
export function describeError(error: unknown): string {
  if (!isRpcError(error)) {
    return error instanceof Error ? error.message : String(error);
  }
  const kind = errorType(error);
  const path = errorPath(error);
  let message = error.message;
  if (path !== undefined && message.startsWith(path)) {
    message = message.slice(path.length).replace(/^[\s:]+/, '');
  }
  const head = `error ${error.code}` + (kind ? ` ${kind}` : '') + (path !== undefined ? ` at ${path}` : '');
  return `${head}: ${message}`.replace(/\s*\n\s*/g, ' ');
}

/** One line for a run that ended without success (`success: false`). */
export function describeFailure(result: AgentRunResult): string {
  const kind = result.errorInfo?.kind ? ` (${result.errorInfo.kind})` : '';
  const message = result.status.message ?? result.output;
  return `${result.status.code}${kind}: ${message}`.replace(/\s*\n\s*/g, ' ');
}
