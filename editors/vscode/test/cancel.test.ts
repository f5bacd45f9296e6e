/**
 * Cancellation against the real host: cancelling a run sends
 * `$/cancelRequest`; the host answers -32800 with the partial result, which
 * the client shows, and the connection goes on serving.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { echoAgent, processAgent, useHostSession } from './helpers';

const ctx = useHostSession();

test('Cancel mid-stream: -32800 with the partial result, shown as [cancelled]', async () => {
  const agent = echoAgent('slow', 'slow-echo');
  let rendered = '';
  let cancelled = 0;
  const run = ctx.session.ask(
    agent,
    { question: 'a question long enough to stream for a while' },
    {
      onText: (delta) => {
        rendered += delta;
        if (cancelled === 0) {
          cancelled = ctx.session.cancelAll(); // on the first chunk
        }
      },
    },
  );
  const outcome = await run.outcome;
  assert.equal(cancelled, 1);
  assert.ok(outcome.kind === 'cancelled', JSON.stringify(outcome));
  const partial = outcome.partial;
  assert.ok(partial, 'the -32800 error must carry data.partial');
  assert.equal(partial.status.code, 'cancelled');
  assert.equal(partial.aborted, true);
  assert.ok(partial.output.length > 0, 'some text had streamed');
  // What streamed and what the host kept are both beginnings of the full echo reply.
  const full = (await ctx.session.ask(echoAgent('fast'), {
    question: 'a question long enough to stream for a while',
  }).outcome) as { kind: 'done'; text: string };
  assert.ok(full.text.startsWith(partial.output));
  assert.ok(full.text.startsWith(outcome.text));
  assert.ok(partial.output.length < full.text.length, 'the run stopped before the end');
  assert.ok(rendered.endsWith('\n[cancelled]\n') || rendered.endsWith('[cancelled]\n'), rendered);
  assert.equal(ctx.session.inFlight().length, 0);
});

test('Cancel a process run: its partial output is kept and the host serves on', async () => {
  const run = ctx.session.ask(
    processAgent('sleeper', 'echo started; sleep 30; echo never'),
    { question: 'x' },
    {
      onText: (delta) => {
        if (delta.includes('started')) {
          run.cancel();
        }
      },
    },
  );
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'cancelled', JSON.stringify(outcome));
  assert.equal(outcome.partial?.output, 'started\n');
  // The connection still serves: the next ask works.
  const next = await ctx.session.ask(processAgent('after', 'echo ok'), { question: 'x' }).outcome;
  assert.ok(next.kind === 'done' && next.result.output === 'ok\n');
});

test('a cancelled conversation turn leaves the history as it was', async () => {
  const agent = echoAgent('chatty', 'slow-echo');
  const first = await ctx.session.chat(agent, { question: 'one' }).outcome;
  assert.ok(first.kind === 'done');
  const run = ctx.session.chat(
    agent,
    { question: 'two' },
    {
      onWorkDone: (value) => {
        if (value.kind === 'begin') {
          run.cancel();
        }
      },
    },
  );
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'cancelled', JSON.stringify(outcome));
  assert.equal(outcome.partial?.status.code, 'cancelled');
  const history = await ctx.session.history(agent);
  assert.equal(history.length, 2);
  assert.deepEqual(history[0], { role: 'user', content: [{ type: 'text', text: 'one' }] });
});

test('Cancel with nothing in flight cancels nothing', () => {
  assert.equal(ctx.session.cancelAll(), 0);
});
