/**
 * Conversation turns against the real host: Chat (agent/prompt) builds the
 * agent's history, Show history reads it, Reset conversation clears it, and a
 * host that no longer knows the agent (restarted) gets a new one.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { renderHistory } from '../src/core/render';
import type { WorkDoneValue } from '../src/core/session';
import { echoAgent, processAgent, useHostSession } from './helpers';

const ctx = useHostSession();

test('chat turns build the history; reset clears it', async () => {
  const agent = echoAgent('talker');
  assert.deepEqual(await ctx.session.history(agent), [], 'no turn yet: empty, and no agent created for it');

  const work: WorkDoneValue[] = [];
  let rendered = '';
  const first = await ctx.session.chat(
    agent,
    { question: 'first question' },
    {
      onWorkDone: (v) => work.push(v),
      onText: (d) => (rendered += d),
    },
  ).outcome;
  assert.ok(first.kind === 'done' && first.result.success, JSON.stringify(first));
  // Streamed (a host whose agent/prompt takes a partialResultToken) or written
  // when the turn completes (one that refuses it: asked again without, once),
  // the reply reads the same.
  assert.equal(rendered, `${first.result.output}\n`);
  assert.equal(typeof ctx.session.promptsStream, 'boolean', 'the first turn tells whether prompts stream');
  assert.deepEqual(
    work.map((v) => v.kind).filter((kind) => kind !== 'report'), // reports: the run's steps
    ['begin', 'end'],
  );

  const second = await ctx.session.chat(agent, { question: 'second question' }).outcome;
  assert.ok(second.kind === 'done');
  // The provider saw the whole conversation: the echo reply lists three messages.
  const seen = JSON.parse(second.text) as { messages: { role: string }[] };
  assert.deepEqual(
    seen.messages.map((m) => m.role),
    ['user', 'assistant', 'user'],
  );

  const history = await ctx.session.history(agent);
  assert.deepEqual(
    history.map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  assert.deepEqual(history[2], { role: 'user', content: [{ type: 'text', text: 'second question' }] });
  const shown = renderHistory('talker', history);
  assert.match(shown, /^# History of talker\n\n## 1\. user\n\nfirst question\n/);
  assert.match(shown, /## 3\. user\n\nsecond question\n/);

  await ctx.session.reset(agent);
  assert.deepEqual(await ctx.session.history(agent), []);
  assert.equal(renderHistory('talker', []), '# History of talker\n\n(empty: no conversation turns yet)\n');
});

test('one-off asks do not touch the conversation', async () => {
  const agent = echoAgent('mixed');
  await ctx.session.chat(agent, { question: 'kept' }).outcome;
  const oneOff = await ctx.session.ask(agent, { question: 'not kept' }).outcome;
  assert.ok(oneOff.kind === 'done');
  const seen = JSON.parse(oneOff.text) as { messages: unknown[] };
  assert.equal(seen.messages.length, 1, 'agent/stream is fresh: no history sent');
  assert.equal((await ctx.session.history(agent)).length, 2);
});

test('a process agent records the turns the editor had', async () => {
  const agent = processAgent('shell', 'tr a-z A-Z');
  const turn = await ctx.session.chat(agent, { question: 'hello' }).outcome;
  assert.ok(turn.kind === 'done' && turn.result.output === 'HELLO');
  assert.deepEqual(await ctx.session.history(agent), [
    { role: 'user', content: [{ type: 'text', text: 'hello' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'HELLO' }] },
  ]);
});

test('an agent the host no longer knows is created again', async () => {
  const agent = echoAgent('phoenix');
  const first = await ctx.session.agentId(agent);
  // Behind the session's back, as a host restart would: the id is now unknown.
  await ctx.host.connection.sendRequest('agent/dispose', { agentId: first });
  const outcome = await ctx.session.ask(agent, { question: 'still there?' }).outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  const second = await ctx.session.agentId(agent);
  assert.notEqual(second, first);
  const listed = await ctx.host.connection.sendRequest<{ agents: { agentId: string }[] }>('agent/list', {});
  assert.ok(listed.agents.some((a) => a.agentId === second));
});

test('a changed config replaces the agent; disposeAgents ends them all', async () => {
  const before = await ctx.session.agentId(echoAgent('morph'));
  const after = await ctx.session.agentId({ ...echoAgent('morph'), systemPrompt: 'Be brief.' });
  assert.notEqual(after, before);
  await ctx.session.disposeAgents();
  const listed = await ctx.host.connection.sendRequest<{ agents: { agentId: string }[] }>('agent/list', {});
  assert.deepEqual(listed.agents, []);
});
