/**
 * Errors against the real host: structured input to a process agent is
 * answered with InvalidMessageError, formatted with its JSON path; nothing
 * runs and the conversation is unchanged.
 */

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { describeError, describeFailure, errorPath, errorType } from '../src/core/errors';
import { readImageBlock } from '../src/core/input';
import { echoAgent, PNG_FIXTURE, processAgent, useHostSession } from './helpers';

const ctx = useHostSession();

const STRING_ONLY =
  "error -32602 InvalidMessageError at input: agent 'p' has a process backend, which accepts " +
  'string prompts only; send a string instead of a message list or content blocks';

test('an image asked of a process agent: InvalidMessageError with its path, and no spawn', async () => {
  const marker = join(mkdtempSync(join(tmpdir(), 'oma-vscode-')), 'ran');
  const agent = processAgent('p', `touch ${marker}; cat`);
  const image = await readImageBlock(PNG_FIXTURE);
  let rendered = '';
  const outcome = await ctx.session.ask(
    agent,
    { question: 'what is this?', image },
    { onText: (d) => (rendered += d) },
  ).outcome;
  assert.ok(outcome.kind === 'error', JSON.stringify(outcome));
  assert.equal(outcome.message, STRING_ONLY);
  assert.equal(errorType(outcome.error), 'InvalidMessageError');
  assert.equal(errorPath(outcome.error), 'input');
  assert.equal(rendered, `[${STRING_ONLY}]\n`);
  assert.equal(existsSync(marker), false, 'the process must not have been spawned');

  // The same for a conversation turn, which leaves the history as it was.
  const turn = await ctx.session.chat(agent, { question: 'what is this?', image }).outcome;
  assert.ok(turn.kind === 'error');
  assert.equal(turn.message, STRING_ONLY);
  assert.deepEqual(await ctx.session.history(agent), []);
  assert.equal(existsSync(marker), false);
});

test('a text ask with a selection goes to a process agent as one string', async () => {
  const outcome = await ctx.session.ask(processAgent('p2', 'cat'), {
    question: 'Explain this',
    selection: { text: 'x = 1', fileName: 'a.py', languageId: 'python' },
  }).outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  assert.equal(outcome.result.output, 'Explain this\n\nSelection from a.py:\n```python\nx = 1\n```');
});

test('a deep InvalidMessageError from the host is formatted with its full path', async () => {
  const agentId = await ctx.session.agentId(echoAgent());
  const bad = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 5 } },
      ],
    },
  ];
  const error = await ctx.host.connection
    .sendRequest('agent/stream', { agentId, input: bad, partialResultToken: 'raw' })
    .then(
      () => assert.fail('the host accepted a malformed image block'),
      (caught: unknown) => caught,
    );
  assert.equal(
    describeError(error),
    'error -32602 InvalidMessageError at input[0].content[1].source.data: must be a string',
  );
});

test('an unknown config field is InvalidParams, and the agent is not cached', async () => {
  const agent = { ...echoAgent('typo'), modle: 'x' };
  const outcome = await ctx.session.ask(agent, { question: 'hi' }).outcome;
  assert.ok(outcome.kind === 'error');
  assert.match(outcome.message, /^error -32602 InvalidParams: .*modle/);
  // A fixed config works right away: the failed create was not remembered.
  const fixed = await ctx.session.ask(echoAgent('typo'), { question: 'hi' }).outcome;
  assert.ok(fixed.kind === 'done' && fixed.result.success, JSON.stringify(fixed));
});

test('a provider failure is a failed result, not an error', async () => {
  let rendered = '';
  const outcome = await ctx.session.ask(
    echoAgent('f', 'fail'),
    { question: 'hi' },
    { onText: (d) => (rendered += d) },
  ).outcome;
  assert.ok(outcome.kind === 'done');
  assert.equal(outcome.result.success, false);
  assert.match(rendered, /\[error\] test adapter: model 'fail' always fails/);
});

test('a missing API key is one line in the reply, for an ask and a conversation turn', async () => {
  const variable = 'OMA_VSCODE_TEST_UNSET_KEY';
  assert.equal(process.env[variable], undefined, `${variable} must not be set for this test`);
  const agent = { name: 'claude', provider: 'anthropic', model: 'm', apiKeyEnv: variable };
  const error = `anthropic: no API key: the environment variable ${variable} (apiKeyEnv) is not set`;
  for (const run of [ctx.session.ask.bind(ctx.session), ctx.session.chat.bind(ctx.session)]) {
    let rendered = '';
    const outcome = await run(agent, { question: 'hi' }, { onText: (d) => (rendered += d) }).outcome;
    assert.ok(outcome.kind === 'done' && !outcome.result.success, JSON.stringify(outcome));
    const carrying = rendered.split('\n').filter((line) => line.includes(error));
    assert.equal(carrying.length, 1, rendered);
    assert.equal(describeFailure(outcome.result), `error (auth): ${error}`, 'the one notification');
  }
});
