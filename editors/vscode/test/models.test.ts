/**
 * "OMA: Choose model" against the real host and the provider simulator
 * (tests/editors/fixtures/models_simulator.py): the model list comes from the
 * provider's list endpoint through models/list, a failure is the host's
 * ProviderError, and switching the model keeps the agent's conversation.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { describeError, isRpcError } from '../src/core/errors';
import { chooseModel, modelPickItems, modelsListParams, withModelChoices } from '../src/core/modelChoice';
import { readSettings } from '../src/core/settings';
import { echoAgent, processAgent, useHostSession } from './helpers';

// The key the host reads through apiKeyEnv; it must never come back in an answer.
const KEY_ENV = 'OMA_VSCODE_MODELS_TEST_KEY';
const KEY = 'sk-models-test-4d1c';

process.env[KEY_ENV] = KEY; // the host inherits it
const ctx = useHostSession({ fixture: 'models_simulator.py' });

function claude(model = 'sim-small') {
  return { name: 'claude', provider: 'anthropic', model, baseURL: ctx.simulator.baseURL, apiKeyEnv: KEY_ENV };
}

/** The models the simulator was asked for since `from` (its `posted model NAME` lines). */
async function postedModels(from: number, count: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  while (ctx.simulator.lines.length < from + count && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 20));
  }
  return ctx.simulator.lines.slice(from).map((line) => line.replace(/^posted model /, ''));
}

// The fixture answers its first request 401: this test must run first.
test('a provider that refuses the list is the host ProviderError, and is asked again next time', async () => {
  const error: unknown = await ctx.session.models(claude()).then(
    () => assert.fail('the 401 was not reported'),
    (caught: unknown) => caught,
  );
  assert.ok(isRpcError(error), String(error));
  assert.equal(error.code, -32003);
  assert.deepEqual(error.data, { type: 'ProviderError', kind: 'auth', status: 401 });
  assert.match(describeError(error), /^error -32003 ProviderError: .*invalid x-api-key/);
  assert.ok(!JSON.stringify(error).includes(KEY));

  const models = await ctx.session.models(claude());
  assert.deepEqual(
    models.map((m) => m.id),
    ['sim-small', 'sim-large'],
  );
  assert.equal(models[1].displayName, 'Sim Large');
});

test('the picker lists the models in the provider order and marks the current one', async () => {
  const items = modelPickItems(await ctx.session.models(claude()), 'sim-small');
  assert.deepEqual(items, [
    { label: 'sim-small', description: 'current · Sim Small', model: 'sim-small' },
    { label: 'sim-large', description: 'Sim Large', model: 'sim-large' },
  ]);
});

test('a missing key and an external agent are errors that say what is wrong', async () => {
  const unset = { ...claude(), apiKeyEnv: 'OMA_NO_SUCH_KEY_VARIABLE' };
  await assert.rejects(ctx.session.models(unset), (error: unknown) => {
    assert.ok(isRpcError(error));
    assert.equal(error.code, -32003);
    assert.deepEqual(error.data, { type: 'ProviderError', kind: 'auth' });
    assert.match(error.message, /OMA_NO_SUCH_KEY_VARIABLE \(apiKeyEnv\) is not set/);
    return true;
  });
  await assert.rejects(ctx.session.models(echoAgent()), (error: unknown) => {
    assert.ok(isRpcError(error));
    assert.equal((error.data as { kind?: string }).kind, 'unsupported');
    return true;
  });
  await assert.rejects(
    ctx.session.models(processAgent('shell', 'cat')),
    /shell is an external agent \(backend: process\): it has no provider model list/,
  );
});

test('a chosen model carries on the conversation with the new model', async () => {
  const start = ctx.simulator.lines.length;
  const first = await ctx.session.chat(claude(), { question: 'first question' }).outcome;
  assert.ok(first.kind === 'done' && first.result.success, JSON.stringify(first));
  const oldId = await ctx.session.agentId(claude());

  const switched = await ctx.session.switchModel(claude(), 'sim-large');
  assert.deepEqual(switched, claude('sim-large'));
  const newId = await ctx.session.agentId(switched);
  assert.notEqual(newId, oldId, 'a new agent, already known to the session');

  const second = await ctx.session.chat(switched, { question: 'second question' }).outcome;
  assert.ok(second.kind === 'done' && second.result.success, JSON.stringify(second));
  // The new agent had the old one's turns: the provider saw three messages.
  assert.match(second.result.output, /^simulator saw 3 message\(s\)/);
  assert.deepEqual(await postedModels(start, 2), ['sim-small', 'sim-large']);
  assert.deepEqual(
    (await ctx.session.history(switched)).map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  const listed = await ctx.host.connection.sendRequest<{ agents: { agentId: string }[] }>(
    'agent/list',
    {},
  );
  assert.ok(!listed.agents.some((a) => a.agentId === oldId), 'the old agent was disposed');
});

test('choices lie over the settings until the settings name another model', () => {
  const configured = readSettings((key) => (key === 'agents' ? [claude(), echoAgent()] : undefined));
  const choices = chooseModel({}, configured.agents[0], 'sim-large');
  assert.equal(withModelChoices(configured, choices).agents[0].model, 'sim-large');
  assert.deepEqual(withModelChoices(configured, choices).agents[1], echoAgent(), 'other agents unchanged');
  assert.deepEqual(chooseModel(choices, configured.agents[0], 'sim-small'), {}, 'the configured model again');
  const edited = readSettings((key) => (key === 'agents' ? [claude('sim-tiny')] : undefined));
  assert.equal(withModelChoices(edited, choices).agents[0].model, 'sim-tiny', 'the settings changed: they win');
  assert.deepEqual(modelsListParams(claude()), {
    provider: 'anthropic',
    baseURL: ctx.simulator.baseURL,
    apiKeyEnv: KEY_ENV,
  });
});
