/**
 * Unit tests of the plain core modules: stream assembly and rendering,
 * request building, error formatting, settings and the restart policy.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import { cancelledPartial, describeError, describeFailure, refusesField } from '../src/core/errors';
import {
  askBlocks,
  conversationInput,
  imageBlock,
  imageMediaType,
  promptInput,
  runInput,
  selectionText,
} from '../src/core/input';
import type { AgentConfig, AgentRunResult, StreamEvent } from '../src/core/protocol';
import { askHeading } from '../src/core/render';
import { chatAgent, chooseAgent, initializationOptions, readSettings, RestartPolicy } from '../src/core/settings';
import { ReplyAssembler } from '../src/core/stream';
import { REPO_ROOT } from './helpers';

function result(fields: Partial<AgentRunResult> = {}): AgentRunResult {
  return {
    success: true,
    output: '',
    messages: [],
    tokenUsage: { input_tokens: 0, output_tokens: 0 },
    toolCalls: [],
    status: { code: 'ok' },
    identity: { runId: 'r' },
    ...fields,
  };
}

test('the assembler writes text as it comes and tool activity on lines of its own', () => {
  const a = new ReplyAssembler();
  const deltas = [
    a.push({ type: 'reasoning', data: 'thinking' }),
    a.push({ type: 'reasoning', data: ' hard' }),
    a.push({ type: 'text', data: 'Let me look' }),
    a.push({ type: 'tool_use', data: { type: 'tool_use', id: 't1', name: 'grep', input: { pattern: 'x' } } }),
    a.push({
      type: 'tool_result',
      data: { type: 'tool_result', tool_use_id: 't1', content: 'a.py:1: x', is_error: false },
    }),
    a.push({ type: 'acp_update', data: { kind: 'plan' } }),
    a.push({ type: 'text', data: 'Found it.' }),
    a.finish(result({ output: 'Let me lookFound it.' })),
  ];
  assert.deepEqual(deltas, [
    '[reasoning] thinking',
    ' hard',
    '\nLet me look',
    '\n[tool grep] {"pattern":"x"}\n',
    '[tool result] a.py:1: x\n',
    '',
    'Found it.',
    '\n',
  ]);
  assert.equal(a.text, 'Let me lookFound it.');
  assert.equal(a.rendered, deltas.join(''));
  assert.equal(a.events.length, 7);
});

test('a reply that was not streamed is written when the result arrives; failures end with the status', () => {
  const a = new ReplyAssembler();
  assert.equal(a.finish(result({ output: 'whole reply' })), 'whole reply\n');
  const b = new ReplyAssembler();
  b.push({ type: 'text', data: 'half' });
  b.push({ type: 'error', data: { message: 'stream cut', kind: 'stream' } });
  assert.equal(
    b.finish(result({ success: false, output: 'half', status: { code: 'error', message: 'stream cut' } })),
    '',
    'the streamed error is the status: not shown again',
  );
  assert.equal(b.rendered, 'half\n[error] stream cut\n');
  const failed = result({ success: false, output: 'no key', status: { code: 'error', message: 'no key' } });
  const streamed = new ReplyAssembler();
  streamed.push({ type: 'error', data: { message: 'no key', kind: 'auth' } });
  streamed.finish(failed);
  assert.equal(streamed.rendered, '[error] no key\n', 'an error in the event, output and status: once');
  assert.equal(new ReplyAssembler().finish(failed), '[error: no key]\n', 'in the output and status: once');
  const timeout = new ReplyAssembler();
  timeout.push({ type: 'text', data: 'so far' });
  const late = result({
    success: false,
    output: 'so far',
    status: { code: 'timeout', message: 'after 5 s' },
  });
  assert.equal(timeout.finish(late), '\n[timeout: after 5 s]\n', 'a status not streamed as an error');
  const c = new ReplyAssembler();
  assert.equal(
    c.cancelled(result({ output: 'so far', status: { code: 'cancelled' } })),
    'so far\n[cancelled]\n',
  );
  const d = new ReplyAssembler();
  assert.equal(d.cancelled(undefined), '[cancelled]\n');
});

test('long tool input is cut to a one-line preview', () => {
  const a = new ReplyAssembler();
  const input = { path: 'x'.repeat(500) };
  const delta = a.push({ type: 'tool_use', data: { type: 'tool_use', id: 'r', name: 'file_read', input } });
  assert.equal(delta.length, '[tool file_read] '.length + 200 + 1, delta);
  assert.ok(delta.endsWith('xx...\n'));
});

interface ReplyCase {
  name: string;
  events: StreamEvent[];
  text: string;
  rendered: string;
}

// The same cases and renderings the Neovim plugin's tests check (editors/nvim/tests/run.lua).
const REPLY_EVENTS = resolve(REPO_ROOT, 'tests', 'editors', 'fixtures', 'reply_events.json');
const replyCases = (JSON.parse(readFileSync(REPLY_EVENTS, 'utf8')) as { cases: ReplyCase[] }).cases;

for (const { name, events, text, rendered } of replyCases) {
  test(`the reply: ${name}`, () => {
    const a = new ReplyAssembler();
    const deltas = events.map((event) => a.push(event));
    assert.equal(a.rendered, rendered);
    assert.equal(deltas.join(''), rendered, 'each event appends to what is there');
    assert.equal(a.text, text, 'the reply text holds the run\'s own text events only');
  });
}

test('a shell output is written as it arrives, its marker once, before the first piece', () => {
  const a = new ReplyAssembler();
  const command = { command: 'make' };
  a.push({ type: 'tool_use', data: { type: 'tool_use', id: 's', name: 'shell', input: command } });
  assert.equal(
    a.push({ type: 'tool_output', data: { toolUseId: 's', text: 'one\ntw' } }),
    '[shell output]\none\ntw',
  );
  assert.equal(a.push({ type: 'tool_output', data: { toolUseId: 's', text: 'o\n' } }), 'o\n');
  assert.equal(
    a.push({
      type: 'tool_result',
      data: { type: 'tool_result', tool_use_id: 's', content: 'one\ntwo\n[ended by SIGTERM]' },
    }),
    '[tool result] [ended by SIGTERM]\n',
  );
});

test("a run whose only streamed text was a delegate's shows its own output when it ends", () => {
  const a = new ReplyAssembler();
  const partial = { type: 'text' as const, data: 'partial' };
  a.push({ type: 'delegate', data: { toolUseId: 'd', agent: 'helper', event: partial } });
  assert.equal(a.finish(result({ output: 'the answer' })), '\nthe answer\n');
  assert.equal(a.text, 'the answer');
  assert.equal(a.rendered, '[helper] partial\nthe answer\n');
});

test('an ask becomes blocks in order: question, selection, image', () => {
  const image = imageBlock('/tmp/shot.PNG', new Uint8Array([1, 2, 3]));
  assert.deepEqual(image, {
    type: 'image',
    source: { type: 'base64', media_type: 'image/png', data: 'AQID' },
  });
  const blocks = askBlocks({
    question: 'why?',
    selection: { text: 'a = 1', fileName: 'm.py', languageId: 'python' },
    image,
  });
  assert.deepEqual(blocks, [
    { type: 'text', text: 'why?' },
    { type: 'text', text: 'Selection from m.py:\n```python\na = 1\n```' },
    image,
  ]);
  assert.throws(() => askBlocks({ question: '  ' }), /nothing to ask/);
});

test('files and images attached in the chat follow the selection and the active image', () => {
  const image = imageBlock('a.png', new Uint8Array([1]));
  const attached = imageBlock('b.jpg', new Uint8Array([2]));
  const blocks = askBlocks({
    question: 'compare',
    selection: { text: 'x', fileName: 'a.py' },
    files: [{ text: 'y', fileName: 'b.py', languageId: 'python' }, { text: '' }],
    image,
    images: [attached],
  });
  assert.deepEqual(blocks, [
    { type: 'text', text: 'compare' },
    { type: 'text', text: 'Selection from a.py:\n```\nx\n```' },
    { type: 'text', text: 'Selection from b.py:\n```python\ny\n```' },
    image,
    attached,
  ]);
});

test('media types come from the extension', () => {
  assert.equal(imageMediaType('a.jpg'), 'image/jpeg');
  assert.equal(imageMediaType('a.JPEG'), 'image/jpeg');
  assert.equal(imageMediaType('a.gif'), 'image/gif');
  assert.equal(imageMediaType('a.webp'), 'image/webp');
  assert.equal(imageMediaType('a.bmp'), undefined);
  assert.throws(() => imageBlock('a.bmp', new Uint8Array()), /a\.bmp: not an image type/);
});

test('a selection holding backticks gets a longer fence', () => {
  const text = selectionText({ text: 'say ```hi```\n' });
  assert.equal(text, 'Selection:\n````\nsay ```hi```\n````');
});

test('string-only agents get text asks as one string; LLM agents get blocks', () => {
  const llm: AgentConfig = { name: 'l', provider: 'test', model: 'echo' };
  const proc: AgentConfig = { name: 'p', backend: { kind: 'process', command: 'cat' } };
  assert.equal(
    promptInput(proc, { question: 'q', selection: { text: 's' } }),
    'q\n\nSelection:\n```\ns\n```',
  );
  assert.deepEqual(promptInput(llm, { question: 'q' }), [{ type: 'text', text: 'q' }]);
  assert.deepEqual(runInput(llm, { question: 'q' }), [
    { role: 'user', content: [{ type: 'text', text: 'q' }] },
  ]);
  assert.equal(runInput(proc, { question: 'q' }), 'q');
  const image = imageBlock('x.png', new Uint8Array([0]));
  assert.deepEqual(runInput(proc, { question: 'q', image }), [
    { role: 'user', content: [{ type: 'text', text: 'q' }, image] },
  ]);
});

test('errors are one line: code, type, path, message without the repeated path', () => {
  assert.equal(
    describeError({
      code: -32602,
      message: 'input[0].role must be "user" or "assistant"',
      data: { type: 'InvalidMessageError', path: 'input[0].role' },
    }),
    'error -32602 InvalidMessageError at input[0].role: must be "user" or "assistant"',
  );
  assert.equal(
    describeError({ code: -32001, message: "no agent with agentId 'x'", data: { type: 'AgentNotFound' } }),
    "error -32001 AgentNotFound: no agent with agentId 'x'",
  );
  assert.equal(
    describeError({ code: -32603, message: 'line one\n  line two' }),
    'error -32603: line one line two',
  );
  assert.equal(describeError(new Error('spawn oma-host ENOENT')), 'spawn oma-host ENOENT');
  const partial = result({ output: 'so', status: { code: 'cancelled' } });
  assert.deepEqual(
    cancelledPartial({ code: -32800, message: 'c', data: { type: 'RequestCancelled', partial } }),
    partial,
  );
  assert.equal(cancelledPartial({ code: -32602, message: 'x', data: { partial } }), undefined);
  assert.equal(
    describeFailure(
      result({
        success: false,
        status: { code: 'error', message: 'HTTP 401' },
        errorInfo: { kind: 'auth', message: 'HTTP 401' },
      }),
    ),
    'error (auth): HTTP 401',
  );
});

test('settings: defaults, checks, and which agent an ask goes to', () => {
  const values: Record<string, unknown> = {};
  const read = (key: string): unknown => values[key];
  assert.deepEqual(readSettings(read), {
    command: '',
    args: [],
    stateDir: '',
    agents: [],
    defaultAgent: '',
  });
  assert.throws(() => chooseAgent(readSettings(read)), /no agents are configured/);

  values['host.command'] = '/opt/oma/bin/oma-host';
  values['host.args'] = ['--log-level', 'INFO'];
  values.stateDir = '/tmp/state';
  values.agents = [
    { name: 'a', model: 'm' },
    { name: 'b', backend: { kind: 'process', command: 'cat' } },
  ];
  const settings = readSettings(read);
  assert.equal(settings.command, '/opt/oma/bin/oma-host');
  assert.deepEqual(settings.args, ['--log-level', 'INFO']);
  assert.deepEqual(initializationOptions(settings), { stateDir: '/tmp/state' });
  assert.equal(chooseAgent(settings), undefined, 'two agents and no default: the person picks');
  values.defaultAgent = 'b';
  assert.equal(chooseAgent(readSettings(read))?.name, 'b');
  values.defaultAgent = 'c';
  assert.throws(() => chooseAgent(readSettings(read)), /"c" is not in oma.agents/);

  values.agents = [{ model: 'm' }];
  assert.throws(() => readSettings(read), /oma\.agents\[0\] must be an object with a string "name"/);
  values.agents = [{ name: 'a' }, { name: 'a' }];
  assert.throws(() => readSettings(read), /"a" is used twice/);
});

test('a crashing host is restarted, but not in a loop', () => {
  const policy = new RestartPolicy(3, 60_000);
  assert.equal(policy.shouldRestart(0), true);
  assert.equal(policy.shouldRestart(1_000), true);
  assert.equal(policy.shouldRestart(2_000), true);
  assert.equal(policy.shouldRestart(3_000), false, 'a fourth crash within the minute');
  assert.match(policy.describe(), /exited 4 times within 60 s/);
  assert.equal(policy.shouldRestart(200_000), true, 'old crashes age out');
});

test('the heading above a reply quotes the question and summarises images', () => {
  const image = imageBlock('x.png', new Uint8Array([1, 2, 3]));
  assert.equal(
    askHeading('ask', 'claude', [{ type: 'text', text: 'what\nis this?' }, image]),
    '## ask · claude\n\n> what\n> is this?\n> [image image/png, 4 base64 chars]\n\n',
  );
});

test('the chat asks the agent picked with /agent, else the default, the only or the first one', () => {
  const settings = readSettings((key) =>
    key === 'agents' ? [{ name: 'a' }, { name: 'b' }] : key === 'defaultAgent' ? '' : undefined,
  );
  assert.equal(chatAgent(settings, undefined).name, 'a');
  assert.equal(chatAgent(settings, 'b').name, 'b');
  assert.equal(chatAgent(settings, 'gone').name, 'a', 'a picked agent no longer configured');
  const withDefault = { ...settings, defaultAgent: 'b' };
  assert.equal(chatAgent(withDefault, undefined).name, 'b');
});

test('a conversation from VS Code becomes agent/stream input', () => {
  const text = (t: string) => ({ type: 'text' as const, text: t });
  const messages = [
    { role: 'user' as const, content: [text('hi')] },
    { role: 'assistant' as const, content: [] },
    { role: 'user' as const, content: [text('again')] },
  ];
  assert.deepEqual(conversationInput({ name: 'llm' }, messages), [
    { role: 'user', content: [text('hi'), text('again')] },
  ]);
  const shout: AgentConfig = { name: 'shout', backend: { kind: 'process', command: 'cat' } };
  assert.equal(conversationInput(shout, messages), 'hi\n\nagain');
  assert.throws(
    () => conversationInput({ name: 'llm' }, [{ role: 'assistant', content: [text('x')] }]),
    /does not end with a user message/,
  );
});

test('an InvalidParams answer naming a field tells the client the host does not take it', () => {
  const refused = { code: -32602, message: 'agent/prompt: params.partialResultToken: unknown field' };
  assert.equal(refusesField(refused, 'partialResultToken'), true);
  assert.equal(refusesField({ code: -32602, message: 'input: bad' }, 'partialResultToken'), false);
  assert.equal(refusesField({ code: -32001, message: 'partialResultToken' }, 'partialResultToken'), false);
});
