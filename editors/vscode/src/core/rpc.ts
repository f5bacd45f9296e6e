/**
 * The slice of a JSON-RPC connection the client logic needs, and `request`,
 * which types a method's params and result from the generated `Methods`.
 *
 * Both vscode-jsonrpc's MessageConnection (the tests, over the real host's
 * stdio) and vscode-languageclient's LanguageClient (the extension) have
 * these methods with compatible signatures, so the core runs unchanged on
 * either; the compiler checks both fits.
 */

import type {
  CancellationToken,
  Disposable,
  GenericNotificationHandler,
  GenericRequestHandler,
  NotificationHandler,
  ProgressType,
} from 'vscode-jsonrpc';

import type { Methods } from './protocol';

export interface RpcPeer {
  sendRequest<R>(method: string, param: unknown, token?: CancellationToken): Promise<R>;
  onRequest<R, E>(method: string, handler: GenericRequestHandler<R, E>): Disposable;
  onNotification(method: string, handler: GenericNotificationHandler): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: NotificationHandler<P>): Disposable;
}

/** `method` with the params and result docs/protocol.schema.json gives it. */
export function request<M extends keyof Methods>(
  peer: RpcPeer,
  method: M,
  params: Methods[M]['params'],
  token?: CancellationToken,
): Promise<Methods[M]['result']> {
  // Without a token, none is passed: vscode-jsonrpc would send a trailing undefined as a positional param.
  return token === undefined
    ? peer.sendRequest<Methods[M]['result']>(method, params)
    : peer.sendRequest<Methods[M]['result']>(method, params, token);
}
