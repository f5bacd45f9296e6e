/**
 * oma-host agents as language models in VS Code's model picker
 * (`vscode.lm.registerLanguageModelChatProvider`, vendor "oma-host").
 *
 * VS Code's Chat view answers no request, not even one for a chat participant
 * such as `@oma`, unless some language model is available: without one it
 * shows "Language model unavailable", and the only models a fresh VS Code or
 * code-server has come from signing in to a hosted service. Providing the
 * configured agents as models makes the Chat view work with oma-host alone.
 * A request to one of them is an agent/stream run with the conversation VS
 * Code hands over; its text streams back as it arrives; cancelling it sends
 * `$/cancelRequest`.
 */

import * as vscode from 'vscode';

import { describeFailure } from './core/errors';
import { conversationInput, imageBlock } from './core/input';
import type { AgentConfig, ContentBlock, LLMMessage } from './core/protocol';
import type { OmaSession, RunHandle } from './core/session';
import type { OmaSettings } from './core/settings';

export const MODEL_VENDOR = 'oma-host';

export interface ModelHost {
  settings(): OmaSettings;
  ready(): Promise<OmaSession>;
  track(handle: RunHandle): void;
}

export function registerAgentModels(context: vscode.ExtensionContext, host: ModelHost): void {
  const changed = new vscode.EventEmitter<void>();
  const provider: vscode.LanguageModelChatProvider = {
    onDidChangeLanguageModelChatInformation: changed.event,
    provideLanguageModelChatInformation: () => {
      let agents: AgentConfig[];
      try {
        agents = host.settings().agents;
      } catch {
        return []; // malformed oma.agents: the commands and @oma report it
      }
      return agents.map((agent) => ({
        id: agent.name,
        name: `oma: ${agent.name}`,
        family: 'oma-host',
        version: '1',
        detail: agent.backend?.kind ?? agent.model ?? '',
        tooltip: `The oma-host agent "${agent.name}" from oma.agents`,
        maxInputTokens: 200_000,
        maxOutputTokens: 64_000,
        capabilities: { imageInput: agent.backend === undefined },
      }));
    },
    provideLanguageModelChatResponse: async (model, messages, _options, progress, token) => {
      const agent = host.settings().agents.find((a) => a.name === model.id);
      if (agent === undefined) {
        throw new Error(`the agent "${model.id}" is no longer in oma.agents`);
      }
      const input = conversationInput(agent, messages.map(toLLMMessage));
      const session = await host.ready();
      let failure: string | undefined;
      const handle = session.stream(agent, input, {
        onText: (delta) => progress.report(new vscode.LanguageModelTextPart(delta)),
        onError: (message) => (failure = message),
      });
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
      if (failure !== undefined) {
        throw new Error(failure);
      }
    },
    provideTokenCount: async (_model, text) => {
      const content = typeof text === 'string' ? text : JSON.stringify(text.content);
      return Math.ceil(content.length / 4); // an estimate: the host counts the real tokens
    },
  };
  context.subscriptions.push(
    changed,
    vscode.lm.registerLanguageModelChatProvider(MODEL_VENDOR, provider),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('oma.agents')) {
        changed.fire();
      }
    }),
  );
}

function toLLMMessage(message: vscode.LanguageModelChatRequestMessage): LLMMessage {
  const content: ContentBlock[] = [];
  for (const part of message.content) {
    if (part instanceof vscode.LanguageModelTextPart) {
      content.push({ type: 'text', text: part.value });
    } else if (isDataPart(part) && part.mimeType.startsWith('image/')) {
      content.push(imageBlock(`image.${part.mimeType.slice(6).replace('jpeg', 'jpg')}`, part.data));
    }
  }
  const role = message.role === vscode.LanguageModelChatMessageRole.Assistant ? 'assistant' : 'user';
  return { role, content };
}

function isDataPart(part: unknown): part is { mimeType: string; data: Uint8Array } {
  return (
    typeof part === 'object' &&
    part !== null &&
    typeof (part as { mimeType?: unknown }).mimeType === 'string' &&
    (part as { data?: unknown }).data instanceof Uint8Array
  );
}
