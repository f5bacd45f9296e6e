/**
 * Plain-text rendering for the reply document: section headings for each
 * ask, and a conversation history. Images are summarised, never dumped.
 */

import type { ContentBlock, LLMMessage } from './protocol';

export function describeBlock(block: ContentBlock): string {
  if (block.type === 'text' && typeof (block as { text?: unknown }).text === 'string') {
    return (block as { text: string }).text;
  }
  if (block.type === 'image') {
    const source = (block as { source?: { media_type?: unknown; data?: unknown } }).source ?? {};
    const size = typeof source.data === 'string' ? source.data.length : 0;
    return `[image ${String(source.media_type ?? '?')}, ${size} base64 chars]`;
  }
  if (block.type === 'tool_use') {
    return `[tool_use ${String((block as { name?: unknown }).name)}]`;
  }
  return `[${block.type}]`;
}

/** The heading written above a reply. */
export function askHeading(kind: string, agentName: string, blocks: ContentBlock[] | string): string {
  const question = typeof blocks === 'string' ? blocks : blocks.map((b) => describeBlock(b)).join('\n');
  const quoted = question
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `## ${kind} · ${agentName}\n\n${quoted}\n\n`;
}

/** The whole history as markdown, one section per message. */
export function renderHistory(agentName: string, messages: LLMMessage[]): string {
  if (messages.length === 0) {
    return `# History of ${agentName}\n\n(empty: no conversation turns yet)\n`;
  }
  const parts = messages.map((message, index) => {
    const body = message.content.map((block) => describeBlock(block)).join('\n');
    return `## ${index + 1}. ${message.role}\n\n${body}\n`;
  });
  return `# History of ${agentName}\n\n${parts.join('\n')}`;
}
