/**
 * Request building: what an editor ask turns into on the wire.
 *
 * An ask is a question, optionally the editor's selection, optionally an
 * image. It becomes content blocks (question text, selection text, image as a
 * base64 ImageBlock whose media type comes from the file extension). Agents
 * with an external backend (process, ACP) take strings only, so for them an
 * all-text ask is sent as one string; an image is still sent as blocks, and the
 * host answers with its InvalidMessageError rather than the client hiding the
 * boundary.
 */

import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';

import type {
  AgentConfig,
  ContentBlock,
  ImageBlock,
  LLMMessage,
  PromptInput,
  RunInput,
  TextBlock,
} from './protocol';

/** The image types the providers accept, by file extension. */
export const IMAGE_MEDIA_TYPES: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

/** The media type of an image file, or undefined when it is not one we send. */
export function imageMediaType(path: string): string | undefined {
  return IMAGE_MEDIA_TYPES[extname(path).toLowerCase()];
}

export function isImagePath(path: string): boolean {
  return imageMediaType(path) !== undefined;
}

/** An ImageBlock from a file's bytes; throws for an extension we do not know. */
export function imageBlock(path: string, bytes: Uint8Array): ImageBlock {
  const mediaType = imageMediaType(path);
  if (mediaType === undefined) {
    const known = Object.keys(IMAGE_MEDIA_TYPES).join(', ');
    throw new Error(`${basename(path)}: not an image type oma-host sends (${known})`);
  }
  return {
    type: 'image',
    source: { type: 'base64', media_type: mediaType, data: Buffer.from(bytes).toString('base64') },
  };
}

export async function readImageBlock(path: string): Promise<ImageBlock> {
  if (!isImagePath(path)) {
    imageBlock(path, new Uint8Array()); // throws the explanatory error
  }
  return imageBlock(path, await readFile(path));
}

export interface Selection {
  text: string;
  /** Shown to the agent above the code, e.g. `src/main.py`. */
  fileName?: string;
  languageId?: string;
}

export interface Ask {
  question: string;
  selection?: Selection;
  image?: ImageBlock;
  /** Further text attachments (files or ranges attached in the chat), after the selection. */
  files?: Selection[];
  /** Further images (attached in the chat), after `image`. */
  images?: ImageBlock[];
}

/** The selection as a fenced block, long enough a fence that the text cannot close it. */
export function selectionText(selection: Selection): string {
  const longest = Math.max(2, ...[...selection.text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const label = selection.fileName ? `Selection from ${selection.fileName}:\n` : 'Selection:\n';
  const body = selection.text.endsWith('\n') ? selection.text : `${selection.text}\n`;
  return `${label}${fence}${selection.languageId ?? ''}\n${body}${fence}`;
}

/** The ask as content blocks: question, selection, attached files, images, in that order. */
export function askBlocks(ask: Ask): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (ask.question.trim() !== '') {
    blocks.push({ type: 'text', text: ask.question });
  }
  for (const text of [ask.selection, ...(ask.files ?? [])]) {
    if (text !== undefined && text.text !== '') {
      blocks.push({ type: 'text', text: selectionText(text) });
    }
  }
  for (const image of [ask.image, ...(ask.images ?? [])]) {
    if (image !== undefined) {
      blocks.push(image);
    }
  }
  if (blocks.length === 0) {
    throw new Error('nothing to ask: the question is empty and there is no selection or image');
  }
  return blocks;
}

export function hasExternalBackend(config: AgentConfig): boolean {
  return config.backend !== undefined && config.backend !== null;
}

function allText(blocks: ContentBlock[]): blocks is TextBlock[] {
  return blocks.every((block) => block.type === 'text');
}

/** agent/prompt input for `config`: blocks, or one string for a string-only agent. */
export function promptInput(config: AgentConfig, ask: Ask): PromptInput {
  const blocks = askBlocks(ask);
  if (hasExternalBackend(config) && allText(blocks)) {
    return blocks.map((block) => block.text).join('\n\n');
  }
  return blocks;
}

/** agent/stream and oma/runAgent input: the blocks as one user message. */
export function runInput(config: AgentConfig, ask: Ask): RunInput {
  const input = promptInput(config, ask);
  if (typeof input === 'string') {
    return input;
  }
  const message: LLMMessage = { role: 'user', content: input };
  return [message];
}

/**
 * agent/stream input for a whole conversation (VS Code's language model API
 * hands one over per request): empty messages dropped, consecutive messages of
 * one role merged. A string-only agent (process, ACP) gets the last user
 * message, as one string when it is all text.
 */
export function conversationInput(config: AgentConfig, messages: LLMMessage[]): RunInput {
  const merged: LLMMessage[] = [];
  for (const message of messages) {
    if (message.content.length === 0) {
      continue;
    }
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === message.role) {
      last.content.push(...message.content);
    } else {
      merged.push({ role: message.role, content: [...message.content] });
    }
  }
  const last = merged[merged.length - 1];
  if (last === undefined || last.role !== 'user') {
    throw new Error('nothing to ask: the conversation does not end with a user message');
  }
  if (hasExternalBackend(config)) {
    return allText(last.content) ? last.content.map((block) => block.text).join('\n\n') : [last];
  }
  return merged;
}
