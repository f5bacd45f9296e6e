/**
 * An agent's delegates against the real host and the provider simulator
 * (tests/editors/fixtures/events_simulator.py delegate): the host binds each
 * name in `config.delegates` to an agent created before, so the session
 * creates the configured delegates first (their own too), once; a cycle or
 * a name not configured is the host's to refuse.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { AgentConfig } from '../src/core/protocol';
import { echoAgent, processAgent, useHostSession } from './helpers';

/** The agents "in the settings": what the session's agentNamed looks up. */
let configured: AgentConfig[] = [];

const ctx = useHostSession({ fixture: 'events_simulator.py', args: ['delegate'] }, (name) =>
  configured.find((agent) => agent.name === name),
);

async function agentNames(): Promise<string[]> {
  const answer = await ctx.host.connection.sendRequest<{ agents: { name: string }[] }>('agent/list', {});
  return answer.agents.map((agent) => agent.name);
}

/** The host's refusal of an agent whose first delegate is no agent called `name`. */
function refused(name: string): RegExp {
  return new RegExp(`delegates\\[0\\]: no agent named '${name}' on this connection`);
}

test('a lead asked first delegates to a reviewer never used before', async () => {
  const reviewer = processAgent('reviewer', 'echo looks fine');
  const lead: AgentConfig = {
    name: 'lead',
    provider: 'anthropic',
    model: 'sim-1',
    baseURL: ctx.simulator.baseURL,
    apiKey: 'sk-test-key',
    delegates: ['reviewer'],
    permissions: [{ tool: 'delegate', action: 'allow' }],
  };
  configured = [reviewer, lead];
  let document = '';
  const run = ctx.session.ask(lead, { question: 'have it reviewed' }, {
    onText: (delta) => (document += delta),
  });
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  assert.equal(
    document,
    `[tool delegate] ${JSON.stringify({ agent: 'reviewer', task: 'review the change' })}\n` +
      '[permission] delegate reviewer: allow\n' +
      '[reviewer] looks fine\n' +
      '[tool result] looks fine\n' +
      'the reviewer agrees\n',
  );
  assert.equal(outcome.text, 'the reviewer agrees', "the delegate's text is not the lead's reply");
  assert.deepEqual(await agentNames(), ['reviewer', 'lead'], 'the reviewer was created first');

  // Known with the same config: neither is created again.
  await ctx.session.agentId(lead);
  await ctx.session.agentId(reviewer);
  assert.deepEqual(await agentNames(), ['reviewer', 'lead'], 'neither created again');
});

test("a delegate's delegates come first; a cycle or an unknown name is the host's to refuse", async () => {
  const before = await agentNames();
  const bottom = echoAgent('bottom');
  const middle = { ...echoAgent('middle'), delegates: ['bottom'] };
  const top = { ...echoAgent('top'), delegates: ['middle', 'bottom'] };
  const ping = { ...echoAgent('ping'), delegates: ['pong'] };
  const pong = { ...echoAgent('pong'), delegates: ['ping'] };
  const loner = { ...echoAgent('loner'), delegates: ['nobody'] };
  configured = [bottom, middle, top, ping, pong, loner];

  await ctx.session.agentId(top);
  assert.deepEqual((await agentNames()).slice(before.length), ['bottom', 'middle', 'top']);

  // ping creates pong first, which names ping, not created yet: the host refuses pong,
  // and that refusal is the answer for ping too (the host refuses it for want of pong).
  await assert.rejects(ctx.session.agentId(ping), refused('ping'));
  await assert.rejects(ctx.session.agentId(loner), refused('nobody'));
  const created = (await agentNames()).slice(before.length);
  assert.deepEqual(created, ['bottom', 'middle', 'top'], 'none of them exists');

  // The host keeps serving, and the session still knows the ones it created.
  const outcome = await ctx.session.ask(top, { question: 'still there?' }).outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  assert.deepEqual((await agentNames()).slice(before.length), ['bottom', 'middle', 'top']);
});
