/**
 * The slice of a JSON-RPC connection the client logic needs.
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

export interface RpcPeer {
  sendRequest<R>(method: string, param: unknown, token?: CancellationToken): Promise<R>;
  onRequest<R, E>(method: string, handler: GenericRequestHandler<R, E>): Disposable;
  onNotification(method: string, handler: GenericNotificationHandler): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: NotificationHandler<P>): Disposable;
}
