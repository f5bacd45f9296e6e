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
import { OmaSession } from '../src/core/session';
import { acpAgentScript, type Host, startHost } from './helpers';

const ALL = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

test('the modal offers Allow and Reject when the agent offers both', () => {
  const prompt = permissionPrompt({
    agentName: 'coder',
    title: 'Write notes.txt',
    kind: 'edit',
    optionKinds: ALL,
  });
  assert.equal(prompt.message, 'Agent "coder" asks permission: Write notes.txt (edit)');
  assert.deepEqual(prompt.choices, [
    { label: 'Allow', approve: true },
    { label: 'Reject', approve: false },
  ]);
  assert.match(prompt.detail, /allow_once, allow_always, reject_once, reject_always/);
  assert.deepEqual(permissionAnswer(prompt, 'Allow'), { approve: true });
  assert.deepEqual(permissionAnswer(prompt, 'Reject'), { approve: false });
});

test('dismissing the modal, or an unknown answer, rejects', () => {
  const prompt = permissionPrompt({ agentName: 'a', title: 't', kind: null, optionKinds: ALL });
  assert.deepEqual(permissionAnswer(prompt, undefined), { approve: false });
  assert.deepEqual(permissionAnswer(prompt, 'Maybe'), { approve: false });
  assert.equal(prompt.message, 'Agent "a" asks permission: t');
});

test('only the decisions the agent offers become buttons, labelled by how long they last', () => {
  const always = permissionPrompt({
    agentName: 'a',
    title: 't',
    kind: 'execute',
    optionKinds: ['allow_always', 'reject_always'],
  });
  assert.deepEqual(
    always.choices.map((c) => c.label),
    ['Allow always', 'Reject always'],
  );
  const rejectOnly = permissionPrompt({
    agentName: 'a',
    title: 't',
    kind: null,
    optionKinds: ['reject_once'],
  });
  assert.deepEqual(rejectOnly.choices, [{ label: 'Reject', approve: false }]);
  assert.match(rejectOnly.detail, /offers no way to allow/);
  const none = permissionPrompt({ agentName: 'a', title: 't', kind: null, optionKinds: [] });
  assert.deepEqual(none.choices, []);
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
  });
  await assert.rejects(
    answerPermission({ title: 't' }, async () => 'Allow'),
    /agentName/,
  );
});

// -- through the real host and a real ACP agent ---------------------------------

let host: Host;
let session: OmaSession;
const asked: PermissionPrompt[] = [];
let pick: string | undefined;
let coder: { name: string; backend: { kind: string; [key: string]: unknown } };

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
  pick = 'Allow';
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
