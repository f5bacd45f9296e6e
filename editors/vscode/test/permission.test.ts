/**
 * ACP permission requests: the mapping from `agent/requestPermission` to a
 * modal question and back (unit level), and the round trip through the real
 * host and a real ACP agent (the interop tests' agent on the official SDK).
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import {
  answerPermission,
  parsePermissionRequest,
  type PermissionPrompt,
  permissionAnswer,
  permissionPrompt,
} from '../src/core/permission';
import type { AgentConfig } from '../src/core/protocol';
import { OmaSession } from '../src/core/session';
import { acpAgentScript, type Host, startHost } from './helpers';

const ALL = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

test('an ACP agent offering everything gets Allow once, Always this session and Deny', () => {
  const prompt = permissionPrompt({
    agentName: 'coder',
    title: 'Write notes.txt',
    kind: 'edit',
    optionKinds: ALL,
    source: 'acp',
  });
  assert.equal(prompt.message, 'Agent "coder" asks permission: Write notes.txt (edit)');
  assert.deepEqual(
    prompt.choices.map((c) => c.label),
    ['Allow once', 'Always this session', 'Deny'],
  );
  assert.match(prompt.detail, /allow_once, allow_always, reject_once, reject_always/);
  assert.deepEqual(permissionAnswer(prompt, 'Allow once'), { approve: true, scope: 'once' });
  assert.deepEqual(permissionAnswer(prompt, 'Always this session'), { approve: true, scope: 'session' });
  assert.deepEqual(permissionAnswer(prompt, 'Deny'), { approve: false });
});

test('dismissing the modal, or an unknown answer, denies', () => {
  const prompt = permissionPrompt({ agentName: 'a', title: 't', kind: null, optionKinds: ALL, source: 'acp' });
  assert.deepEqual(permissionAnswer(prompt, undefined), { approve: false });
  assert.deepEqual(permissionAnswer(prompt, 'Maybe'), { approve: false });
  assert.equal(prompt.message, 'Agent "a" asks permission: t');
});

test('only the decisions an ACP agent offers become buttons', () => {
  const always = permissionPrompt({
    agentName: 'a',
    title: 't',
    kind: 'execute',
    optionKinds: ['allow_always', 'reject_always'],
    source: 'acp',
  });
  assert.deepEqual(
    always.choices.map((c) => c.label),
    ['Always this session', 'Deny'],
  );
  const rejectOnly = permissionPrompt({
    agentName: 'a',
    title: 't',
    kind: null,
    optionKinds: ['reject_once'],
    source: 'acp',
  });
  assert.deepEqual(rejectOnly.choices, [{ label: 'Deny', approve: false }]);
  assert.match(rejectOnly.detail, /offers no way to allow/);
  const none = permissionPrompt({ agentName: 'a', title: 't', kind: null, optionKinds: [], source: 'acp' });
  assert.deepEqual(none.choices, []);
});

test('a tool request from the host policy offers all three and names the tool and its target', async () => {
  const params = {
    agentName: 'coder',
    runId: 'r1',
    title: 'Run bash',
    kind: 'execute',
    optionKinds: ['allow_once', 'allow_always', 'reject_once'],
    source: 'tool',
    tool: { name: 'bash', input: { command: 'ls -la' }, target: 'ls -la' },
  };
  const request = parsePermissionRequest(params);
  assert.equal(request.source, 'tool');
  assert.deepEqual(request.tool, { name: 'bash', input: { command: 'ls -la' }, target: 'ls -la' });
  const prompt = permissionPrompt(request);
  assert.deepEqual(
    prompt.choices.map((c) => c.label),
    ['Allow once', 'Always this session', 'Deny'],
  );
  assert.match(prompt.detail, /^Tool bash on ls -la, input \{"command":"ls -la"\}\./);
  assert.deepEqual(await answerPermission(params, async () => 'Always this session'), {
    approve: true,
    scope: 'session',
  });
  assert.deepEqual(await answerPermission(params, async () => 'Allow once'), { approve: true, scope: 'once' });
  assert.deepEqual(await answerPermission(params, async () => undefined), { approve: false });
});

test('a request without source (an older host) is an ACP request', () => {
  const request = parsePermissionRequest({ agentName: 'a', title: 't', kind: null, optionKinds: ['allow_once'] });
  assert.equal(request.source, 'acp');
  assert.equal(request.tool, undefined);
});

test('a malformed request is refused with the field named', async () => {
  assert.throws(() => parsePermissionRequest(null), /params must be an object/);
  assert.throws(() => parsePermissionRequest({ agentName: 1, title: 't', optionKinds: [] }), /agentName/);
  assert.throws(
    () => parsePermissionRequest({ agentName: 'a', title: 't', optionKinds: 'allow_once' }),
    /optionKinds/,
  );
  assert.deepEqual(parsePermissionRequest({ agentName: 'a', title: 't', optionKinds: ['allow_once'] }), {
    agentName: 'a',
    title: 't',
    kind: null,
    optionKinds: ['allow_once'],
    source: 'acp',
  });
  await assert.rejects(
    answerPermission({ title: 't' }, async () => 'Allow once'),
    /agentName/,
  );
  const base = { agentName: 'a', title: 't', optionKinds: [] };
  assert.throws(() => parsePermissionRequest({ ...base, source: 'policy' }), /source must be "acp" or "tool"/);
  assert.throws(() => parsePermissionRequest({ ...base, source: 'tool' }), /must name the tool/);
  assert.throws(() => parsePermissionRequest({ ...base, source: 'tool', tool: { name: 'bash' } }), /tool\.input/);
  assert.throws(
    () => parsePermissionRequest({ ...base, source: 'tool', tool: { name: 'bash', input: {}, target: 3 } }),
    /tool\.target/,
  );
});

// -- through the real host and a real ACP agent ---------------------------------

let host: Host;
let session: OmaSession;
const asked: PermissionPrompt[] = [];
let pick: string | undefined;
let coder: AgentConfig;

before(async () => {
  const script = acpAgentScript();
  host = await startHost();
  session = new OmaSession(host.connection, {
    clientName: 'test',
    permission: async (prompt) => {
      asked.push(prompt);
      return pick;
    },
  });
  coder = {
    name: 'coder',
    backend: { kind: 'acp', command: 'node', args: [script], permission: 'ask-client' },
  };
});

after(async () => {
  session?.dispose();
  if (host !== undefined) {
    assert.equal(await host.close(), 0, host.stderr());
  }
});

test('an ACP permission request reaches the person and their choice reaches the agent', async () => {
  pick = 'Allow once';
  let rendered = '';
  const outcome = await session.ask(
    coder,
    { question: 'edit it [permission]' },
    { onText: (d) => (rendered += d) },
  ).outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  assert.equal(asked.length, 1);
  assert.equal(asked[0].message, 'Agent "coder" asks permission: Write notes.txt (edit)');
  assert.match(outcome.result.output, /permission outcome: opt-allow_once/);
  assert.match(rendered, /\[permission\] Write notes\.txt: allow_once/);

  pick = undefined; // dismissed
  const refused = await session.ask(coder, { question: 'again [permission]' }).outcome;
  assert.ok(refused.kind === 'done', JSON.stringify(refused));
  assert.equal(asked.length, 2);
  assert.match(refused.result.output, /permission outcome: opt-reject_once/);
});

test('without a permission asker every request is rejected', async () => {
  session.setPermissionAsker(undefined);
  const outcome = await session.ask(coder, { question: 'once more [permission]' }).outcome;
  assert.ok(outcome.kind === 'done', JSON.stringify(outcome));
  assert.match(outcome.result.output, /permission outcome: opt-reject_once/);
  assert.equal(asked.length, 2, 'nobody was asked');
});
