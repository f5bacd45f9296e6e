/**
 * A running `shell` call's output in the reply, against the real host and
 * the provider simulator (tests/editors/fixtures/events_simulator.py shell):
 * the model runs a command a permission rule allows, its output arrives as
 * `tool_output` events while it runs, and the reply shows it under the
 * call's marker, before the call's result, which then says only how the
 * command ended.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { AgentConfig, StreamEvent } from '../src/core/protocol';
import { useHostSession } from './helpers';

// What the fixture's model runs (events_simulator.py SHELL_COMMAND).
const COMMAND = "printf 'first\\n'; sleep 0.3; printf 'second\\n'";

const ctx = useHostSession({ fixture: 'events_simulator.py', args: ['shell'] });

test("a shell command's output streams into the reply before its short result", async () => {
  const agent: AgentConfig = {
    name: 'runner',
    provider: 'anthropic',
    model: 'sim-1',
    baseURL: ctx.simulator.baseURL,
    apiKey: 'sk-test-key',
    tools: ['shell'],
    permissions: [{ tool: 'shell', action: 'allow' }],
  };
  const events: StreamEvent[] = [];
  let document = '';
  // The document as it was when each event arrived (before it was rendered).
  const before: string[] = [];
  const run = ctx.session.ask(
    agent,
    { question: 'run the command' },
    {
      onEvent: (event) => {
        events.push(event);
        before.push(document);
      },
      onText: (delta) => (document += delta),
    },
  );
  const outcome = await run.outcome;
  assert.ok(outcome.kind === 'done' && outcome.result.success, JSON.stringify(outcome));
  const kinds = events.map((event) => event.type);
  const outputs = kinds.flatMap((kind, index) => (kind === 'tool_output' ? [index] : []));
  assert.ok(outputs.length >= 2, `the output came in pieces as it was printed: ${JSON.stringify(events)}`);
  const result = kinds.indexOf('tool_result');
  assert.ok(outputs[outputs.length - 1] < result, kinds.join(' '));
  // When the last piece arrived, the first was in the reply already, and no result yet.
  const atLastPiece = before[outputs[outputs.length - 1]];
  assert.ok(atLastPiece.endsWith('[shell output]\nfirst\n'), atLastPiece);
  assert.equal(
    document,
    `[tool shell] ${JSON.stringify({ command: COMMAND })}\n` +
      `[permission] shell ${COMMAND}: allow\n` +
      '[shell output]\nfirst\nsecond\n' +
      '[tool result] [exit code 0]\n' +
      'ran it\n',
  );
  assert.equal(outcome.text, 'ran it', 'the output is not the reply text');
});
