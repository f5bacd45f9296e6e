/**
 * The `@oma` chat participant: the Chat view's glue to an OmaSession.
 *
 * - `@oma question`: a conversation turn with the chat's agent (agent/prompt;
 *   the host keeps the conversation). A new chat (no earlier `@oma` turn in
 *   it) starts a new conversation: the agent's history is reset first.
 * - `@oma /ask question`: a one-off question streamed from agent/stream,
 *   neither reading nor changing the conversation.
 * - `@oma /run [question]`: a fresh one-off agent on the editor's selection
 *   (oma/runAgent with progress notifications).
 * - `@oma /agent [NAME]`: switch the chat's agent, or list the agents.
 * - `@oma /reset`: clear the agent's conversation (agent/reset).
 * - `@oma /history`: the conversation as a markdown document (the export).
 *
 * Text streams into the chat as markdown; the editor's selection, the image in
 * the active tab, and files or images attached in the chat go along as text
 * and image blocks (a process or ACP agent refuses an image with the host's
 * InvalidMessageError, shown as the chat's error). Stopping the reply sends
 * `$/cancelRequest` for the run.
 */

import * as vscode from 'vscode';

import { describeFailure } from './core/errors';
import { type Ask, type Selection, imageBlock, isImagePath } from './core/input';
import type { AgentConfig, ImageBlock } from './core/protocol';
import { renderHistory } from './core/render';
import type { OmaSession, RunHandle, RunObserver, WorkDoneValue } from './core/session';
import { chatAgent, type OmaSettings } from './core/settings';

export const PARTICIPANT_ID = 'oma-host.oma';

export interface ChatHost {
  settings(): OmaSettings;
  ready(): Promise<OmaSession>;
  /** The active editor's selection and the image in the active tab. */
  editorContext(): Promise<Pick<Ask, 'selection' | 'image'>>;
  /** Shows a run in the status bar while it is in flight. */
  track(handle: RunHandle): void;
}

interface TurnMetadata {
  command: string;
  agent: string;
}

/** Switches the chat's agent from outside the chat (a command that picked one). */
export interface ChatAgentPicker {
  pick(name: string): void;
  /** The name picked with `/agent` (or by a command), if any. */
  picked(): string | undefined;
}

export function registerChatParticipant(context: vscode.ExtensionContext, host: ChatHost): ChatAgentPicker {
  let picked: string | undefined;
  const handler: vscode.ChatRequestHandler = async (request, chatContext, stream, token) => {
    const settings = host.settings();
    if (request.command === 'agent') {
      return switchAgent(settings, request.prompt.trim(), stream, (name) => (picked = name));
    }
    const agent = chatAgent(settings, picked);
    const metadata: TurnMetadata = { command: request.command ?? 'chat', agent: agent.name };
    const session = await host.ready();
    if (request.command === 'reset') {
      await session.reset(agent);
      stream.markdown(`${agent.name}'s conversation was reset.`);
      return { metadata };
    }
    if (request.command === 'history') {
      await showHistory(session, agent);
      stream.markdown(`Opened ${agent.name}'s conversation as a markdown document.`);
      return { metadata };
    }
    const ask = { question: request.prompt, ...(await host.editorContext()), ...(await attachments(request)) };
    if (request.command === undefined && !continuesConversation(chatContext, agent.name)) {
      await session.reset(agent); // a new chat is a new conversation
    }
    const mode = request.command === 'ask' || request.command === 'run' ? request.command : 'chat';
    return reply(host, session, agent, ask, mode, stream, token, metadata);
  };
  const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, handler);
  participant.iconPath = new vscode.ThemeIcon('hubot');
  context.subscriptions.push(participant);
  return { pick: (name) => (picked = name), picked: () => picked };
}

/** Whether an earlier turn of this chat was a conversation turn with `agentName`. */
function continuesConversation(chatContext: vscode.ChatContext, agentName: string): boolean {
  return chatContext.history.some(
    (turn) =>
      turn instanceof vscode.ChatResponseTurn &&
      turn.participant === PARTICIPANT_ID &&
      (turn.result.metadata as TurnMetadata | undefined)?.command === 'chat' &&
      (turn.result.metadata as TurnMetadata | undefined)?.agent === agentName,
  );
}

async function reply(
  host: ChatHost,
  session: OmaSession,
  agent: AgentConfig,
  ask: Ask,
  mode: 'chat' | 'ask' | 'run',
  stream: vscode.ChatResponseStream,
  token: vscode.CancellationToken,
  metadata: TurnMetadata,
): Promise<vscode.ChatResult> {
  let failure: string | undefined;
  // Progress lines only until the reply starts: the Chat view folds what
  // follows a progress line into its collapsed "steps", hiding the reply.
  let replying = false;
  const progress = (message: string): void => {
    if (!replying) {
      stream.progress(message);
    }
  };
  const observer: RunObserver = {
    onText: (delta) => {
      replying = true;
      stream.markdown(delta);
    },
    onWorkDone: (value: WorkDoneValue) => {
      if (value.kind !== 'end') {
        progress(value.kind === 'report' ? value.message : `${agent.name} is working…`);
      }
    },
    onRunProgress: (event) => progress(`${event.agent}: ${event.type}`),
    onError: (message) => (failure = message),
  };
  const handle =
    mode === 'ask'
      ? session.ask(agent, ask, observer)
      : mode === 'run'
        ? session.runOnce(agent, ask, observer)
        : session.chat(agent, ask, observer);
  host.track(handle);
  const cancelling = token.onCancellationRequested(() => handle.cancel());
  try {
    const outcome = await handle.outcome;
    if (outcome.kind === 'done' && !outcome.result.success) {
      failure = describeFailure(outcome.result);
    }
  } finally {
    cancelling.dispose();
  }
  return failure === undefined ? { metadata } : { errorDetails: { message: failure }, metadata };
}

function switchAgent(
  settings: OmaSettings,
  name: string,
  stream: vscode.ChatResponseStream,
  pick: (name: string) => void,
): vscode.ChatResult {
  const names = settings.agents.map((agent) => agent.name);
  if (name === '') {
    const current = chatAgent(settings, undefined).name;
    stream.markdown(
      `Agents (from \`oma.agents\`): ${names.map((n) => `\`${n}\``).join(', ')}. ` +
        `\`@oma /agent NAME\` switches; without one the chat asks \`${current}\`.`,
    );
    return {};
  }
  if (!names.includes(name)) {
    return {
      errorDetails: { message: `no agent "${name}" in oma.agents (configured: ${names.join(', ')})` },
    };
  }
  pick(name);
  stream.markdown(`The chat asks \`${name}\` from now on.`);
  return { metadata: { command: 'agent', agent: name } };
}

/** Files, ranges and images attached to the chat request. */
async function attachments(request: vscode.ChatRequest): Promise<Pick<Ask, 'files' | 'images'>> {
  const files: Selection[] = [];
  const images: ImageBlock[] = [];
  for (const reference of request.references) {
    const value: unknown = reference.value;
    if (value instanceof vscode.Uri) {
      if (isImagePath(value.path)) {
        images.push(imageBlock(value.path, await vscode.workspace.fs.readFile(value)));
      } else {
        const document = await vscode.workspace.openTextDocument(value);
        files.push(textOf(document));
      }
    } else if (value instanceof vscode.Location) {
      const document = await vscode.workspace.openTextDocument(value.uri);
      files.push(textOf(document, value.range));
    } else if (isBinaryData(value)) {
      // An image pasted or attached in the chat (ChatReferenceBinaryData).
      const extension = `.${value.mimeType.split('/')[1] ?? ''}`.replace('jpeg', 'jpg');
      images.push(imageBlock(`attached${extension}`, await value.data()));
    }
  }
  return { ...(files.length && { files }), ...(images.length && { images }) };
}

function isBinaryData(value: unknown): value is { mimeType: string; data(): Thenable<Uint8Array> } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { mimeType?: unknown }).mimeType === 'string' &&
    typeof (value as { data?: unknown }).data === 'function'
  );
}

function textOf(document: vscode.TextDocument, range?: vscode.Range): Selection {
  return {
    text: document.getText(range),
    fileName: vscode.workspace.asRelativePath(document.uri),
    languageId: document.languageId,
  };
}

/** The conversation as an untitled markdown document: the one place a reply becomes a document. */
export async function showHistory(session: OmaSession, agent: AgentConfig): Promise<void> {
  const messages = await session.history(agent);
  const document = await vscode.workspace.openTextDocument({
    language: 'markdown',
    content: renderHistory(agent.name, messages),
  });
  await vscode.window.showTextDocument(document, { preview: true });
}
