/**
 * Streaming against the real host: an agent/stream reply assembled from
 * `$/progress` as it arrives, work-done progress around a run, and
 * oma/runAgent on a selection with its `oma/progress` notifications.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { selectionText } from '../src/core/input';
import type { OmaProgressParams, StreamEvent } from '../src/core/protocol';
import type { WorkDoneValue } from '../src/core/session';
import { processAgent, useHostSession } from './helpers';

const ctx = useHostSession();

test('the host initializes with the agent capabilities the client uses', () => {
  const agent = ctx.host.initializeResult.capabilities.agent;
  assert.ok(agent, JSON.stringify(ctx.host.initializeResult));
  for (const method of ['agent/stream', 'agent/prompt', 'agent/history', 'agent/reset', 'oma/runAgent']) {
    assert.ok(agent.methods.includes(method), method);
  }
  assert.equal(ctx.host.initializeResult.serverInfo?.name, 'oma-host');
});

test('a streamed reply is assembled from $/progress events as they arrive', async () => {
  const deltas: string[] = [];
  const events: StreamEvent[] = [];
  const work: WorkDoneValue[] = [];
  const run = ctx.session.ask(
    processAgent('p', 'echo first; sleep 0.3; echo second'),
    { question: 'hello' },
    { onText: (d) => deltas.push(d), onEvent: (e) => events.push(e), onWorkDone: (v) => work.push(v) },
  );
  const outcome = await run.outcome;
  assert.equal(outcome.kind, 'done', JSON.stringify(outcome));
  assert.ok(outcome.kind === 'done');
  assert.equal(outcome.result.output, 'first\nsecond\n');
  assert.equal(outcome.text, outcome.result.output);
  // Two separate text events (the process printed, paused, printed): streamed, not at the end.
  const texts = events.filter((e) => e.type === 'text').map((e) => e.data);
  assert.deepEqual(texts, ['first\n', 'second\n']);
  assert.deepEqual(deltas, ['first\n', 'second\n']);
  assert.deepEqual(
    work.map((v) => v.kind).filter((kind) => kind !== 'report'), // reports: the run's steps
    ['begin', 'end'],
  );
  assert.deepEqual(work[0], { kind: 'begin', title: 'p' });
  assert.deepEqual(work[work.length - 1], { kind: 'end', message: 'ok' });
  assert.equal(ctx.session.inFlight().length, 0);
});

test('a failing process run ends with its error in the reply, once', async () => {
  let rendered = '';
  const run = ctx.session.ask(
    processAgent('bad', 'echo partial; echo broken >&2; exit 3'),
    { question: 'x' },
    {
      onText: (d) => (rendered += d),
    },
  );
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'done');
  assert.equal(outcome.result.success, false);
  assert.equal(outcome.result.status.code, 'error');
  assert.equal(rendered, 'partial\n[error] sh exited with code 3: broken\n');
});

test('Run agent on selection: oma/runAgent with oma/progress notifications', async () => {
  const progress: OmaProgressParams[] = [];
  const work: WorkDoneValue[] = [];
  const selection = { text: 'print("hi")\n', fileName: 'src/a.py', languageId: 'python' };
  const run = ctx.session.runOnce(
    processAgent('runner', 'cat'),
    { question: '', selection },
    { onRunProgress: (e) => progress.push(e), onWorkDone: (v) => work.push(v) },
  );
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'done', JSON.stringify(outcome));
  // A process agent takes a string: the selection, fenced, is the whole prompt.
  assert.equal(outcome.result.output, selectionText(selection));
  assert.deepEqual(
    progress.map((e) => e.type),
    ['agent_start', 'agent_complete'],
  );
  assert.deepEqual(progress[0].data, { prompt: selectionText(selection) });
  assert.ok(progress.every((e) => e.runId === outcome.result.identity.runId && e.agent === 'runner'));
  assert.deepEqual(
    work.map((v) => v.kind).filter((kind) => kind !== 'report'), // reports: the run's steps
    ['begin', 'end'],
  );
});
