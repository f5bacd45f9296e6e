/**
 * Image questions against the real host: the image file becomes a base64
 * ImageBlock (media type from its extension) that reaches the provider as a
 * content block, for a one-off ask (agent/stream), a conversation turn
 * (agent/prompt) and an HTTP provider (the simulator, Anthropic wire format).
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { readImageBlock } from '../src/core/input';
import { echoAgent, PNG_FIXTURE, useHostSession } from './helpers';

const ctx = useHostSession({});

const PNG_BASE64 = readFileSync(PNG_FIXTURE).toString('base64');

test('Ask about image: the provider receives the question and the image as content blocks', async () => {
  const image = await readImageBlock(PNG_FIXTURE);
  const run = ctx.session.ask(echoAgent(), { question: 'What colour is this square?', image });
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  // The echo model replies with the JSON of exactly what the provider adapter was given.
  const received = JSON.parse(outcome.text) as { messages: unknown };
  assert.deepEqual(received.messages, [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What colour is this square?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
      ],
    },
  ]);
});

test('a conversation turn with an image keeps the image block in the history', async () => {
  const agent = echoAgent('eye');
  const image = await readImageBlock(PNG_FIXTURE);
  const outcome = await ctx.session.chat(agent, { question: 'Describe it', image }).outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  const history = await ctx.session.history(agent);
  assert.equal(history.length, 2);
  assert.deepEqual(history[0], {
    role: 'user',
    content: [
      { type: 'text', text: 'Describe it' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
    ],
  });
  assert.equal(history[1].role, 'assistant');
});

test('an image question over HTTP to an Anthropic-format provider (the simulator)', async () => {
  const agent = {
    name: 'claude',
    provider: 'anthropic',
    model: 'm',
    baseURL: ctx.simulator.baseURL,
    apiKey: 'sk-test-key',
  };
  let streamed = '';
  const image = await readImageBlock(PNG_FIXTURE);
  const run = ctx.session.ask(
    agent,
    { question: 'What is in this picture?', image },
    { onText: (d) => (streamed += d) },
  );
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  // The simulator answers with what the last user message held, as it got it over HTTP.
  assert.equal(
    outcome.text,
    "simulator saw 1 message(s); the last user message holds: text 'What is in this picture?', " +
      `image image/png (${PNG_BASE64.length} chars)`,
  );
  assert.ok(streamed.startsWith(outcome.text), streamed);
  assert.ok(!JSON.stringify(outcome.result).includes('sk-test-key'));
});

test('a file that is not an image is refused before anything is sent', async () => {
  await assert.rejects(readImageBlock('/tmp/notes.txt'), /notes\.txt: not an image type/);
});
