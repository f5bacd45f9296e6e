// A scripted ACP agent built on the official TypeScript SDK (@agentclientprotocol/sdk),
// the independent peer for oma-host's ACP interop tests and benchmark.
//
// Each prompt's text is read for markers that choose what the turn does:
//   (none)             reply "you said: <prompt text>" in one chunk, stop end_turn
//   [chunks]           stream "one ", "two ", "three" as three chunks
//   [whoami]           reply "pid=<pid> session=<id> turn=<n>"
//   [thought]          an agent_thought_chunk before the reply
//   [plan]             a plan update and a current_mode_update before the reply
//   [image]            an image chunk (not text) before the reply
//   [tool]             a tool_call (pending) then tool_call_update (completed) with output
//   [failtool]         a tool call that ends with status failed
//   [usage]            usage_update twice; context grows by 100*turn tokens this turn
//   [permission] / [permission:k1,k2]
//                      session/request_permission offering those option kinds
//                      (default all four, least privileged last); replies with the outcome
//   [fs] [terminal]    call fs/read_text_file or terminal/create; reply with the error code
//   [refuse]           stop with refusal; [max_tokens], [max_turn_requests] likewise
//   [crash]            stream a chunk, then exit(3) with a line on stderr
//   [garbage]          write a non-JSON line on stdout, then hang
//   [hang]             stream a chunk, wait for session/cancel, stream "late words", stop cancelled
//   [deaf]             stream a chunk, then never answer (ignores session/cancel)
//   [slow]             stream a chunk, wait 300 ms, stream another, then end_turn
//   [caps]             reply with the JSON of the clientCapabilities sent at initialize
//   [child]            start `sleep 60` (same process group) and reply "child=<pid>"
//   [daemon]           start `sleep 60` detached (setsid: a session of its own), reply "daemon=<pid>"
//   [secret]           stream "key: <$AGENT_API_TOKEN> end", the value split over two chunks
//   [future]           a session/update of a kind no schema knows, before the reply
// While opening a session it announces an available_commands_update (before any turn).
// Environment: ACP_AGENT_MARKER=path appends "pid" lines on start;
// ACP_AGENT_REFUSE_SESSION=1 makes session/new fail with "authentication required";
// ACP_AGENT_EXIT_ON_INITIALIZE=1 exits with code 2 while answering initialize.

import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const M = acp.methods;
const sessions = new Map(); // sessionId -> {turn, used, cancel: () => void | null}
let clientCapabilities = null;

if (process.env.ACP_AGENT_MARKER) {
  appendFileSync(process.env.ACP_AGENT_MARKER, `${process.pid}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function textOf(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

async function update(client, sessionId, body) {
  await client.notify(M.client.session.update, { sessionId, update: body });
}

function say(client, sessionId, text) {
  return update(client, sessionId, {
    sessionUpdate: "agent_message_chunk",
    content: { type: "text", text },
  });
}

const ALL_KINDS = ["allow_always", "reject_always", "reject_once", "allow_once"];

async function askPermission(client, sessionId, text) {
  const match = /\[permission(?::([a-z_,]+))?\]/.exec(text);
  const kinds = match[1] ? match[1].split(",") : ALL_KINDS;
  await update(client, sessionId, {
    sessionUpdate: "tool_call",
    toolCallId: "perm-1",
    title: "Write notes.txt",
    kind: "edit",
    status: "pending",
    rawInput: { path: "notes.txt" },
  });
  const answer = await client.request(M.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "perm-1", title: "Write notes.txt", kind: "edit" },
    options: kinds.map((kind) => ({ optionId: `opt-${kind}`, name: kind, kind })),
  });
  const outcome = answer.outcome;
  const chosen = outcome.outcome === "selected" ? outcome.optionId : "cancelled";
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update",
    toolCallId: "perm-1",
    status: chosen.startsWith("opt-allow") ? "completed" : "failed",
    content: [{ type: "content", content: { type: "text", text: `permission ${chosen}` } }],
  });
  return chosen;
}

async function callClient(client, method, params) {
  try {
    await client.request(method, params);
    return "ok";
  } catch (error) {
    return `error ${error.code}`;
  }
}

async function prompt({ params, client }) {
  const state = sessions.get(params.sessionId);
  if (!state) throw acp.RequestError.sessionNotFound(params.sessionId);
  state.turn += 1;
  const sessionId = params.sessionId;
  const text = textOf(params.prompt);
  const has = (marker) => text.includes(marker);

  if (has("[thought]")) {
    await update(client, sessionId, {
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "thinking it over" },
    });
  }
  if (has("[plan]")) {
    await update(client, sessionId, {
      sessionUpdate: "plan",
      entries: [{ content: "answer the question", priority: "high", status: "in_progress" }],
    });
    await update(client, sessionId, { sessionUpdate: "current_mode_update", currentModeId: "code" });
  }
  if (has("[future]")) {
    await update(client, sessionId, { sessionUpdate: "future_thing", detail: 42 });
  }
  if (has("[image]")) {
    await update(client, sessionId, {
      sessionUpdate: "agent_message_chunk",
      content: { type: "image", mimeType: "image/png", data: "aGVsbG8=" },
    });
  }
  if (has("[usage]")) {
    const grow = 100 * state.turn;
    await update(client, sessionId, { sessionUpdate: "usage_update", used: state.used + grow / 2, size: 100000 });
    state.used += grow;
    await update(client, sessionId, { sessionUpdate: "usage_update", used: state.used, size: 100000 });
  }
  if (has("[tool]")) {
    await update(client, sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "call-1",
      title: "Read a.txt",
      kind: "read",
      status: "pending",
      rawInput: { path: "a.txt" },
    });
    await sleep(30);
    await update(client, sessionId, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call-1",
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "contents of a.txt" } }],
      rawOutput: { bytes: 17 },
    });
  }
  if (has("[failtool]")) {
    await update(client, sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "call-2",
      title: "Run tests",
      kind: "execute",
      status: "in_progress",
      rawInput: { command: "make test" },
    });
    await update(client, sessionId, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call-2",
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: "2 tests failed" } }],
    });
  }
  if (has("[permission")) {
    await say(client, sessionId, `permission outcome: ${await askPermission(client, sessionId, text)}`);
    return { stopReason: "end_turn" };
  }
  if (has("[fs]")) {
    const result = await callClient(client, M.client.fs.readTextFile, { sessionId, path: "/etc/hostname" });
    await say(client, sessionId, `fs: ${result}`);
    return { stopReason: "end_turn" };
  }
  if (has("[terminal]")) {
    const result = await callClient(client, M.client.terminal.create, { sessionId, command: "ls" });
    await say(client, sessionId, `terminal: ${result}`);
    return { stopReason: "end_turn" };
  }
  for (const reason of ["refuse", "max_tokens", "max_turn_requests"]) {
    if (has(`[${reason}]`)) {
      await say(client, sessionId, `stopping: ${reason}`);
      return { stopReason: reason === "refuse" ? "refusal" : reason };
    }
  }
  if (has("[crash]")) {
    await say(client, sessionId, "about to crash");
    await sleep(50);
    process.stderr.write("agent crashing on purpose\n");
    process.exit(3);
  }
  if (has("[garbage]")) {
    await sleep(20);
    process.stdout.write("this is not json\n");
    await new Promise(() => {});
  }
  if (has("[hang]") || has("[deaf]")) {
    await say(client, sessionId, "working...");
    if (has("[deaf]")) await new Promise(() => {});
    await new Promise((resolve) => {
      state.cancel = resolve;
    });
    state.cancel = null;
    await say(client, sessionId, "late words"); // after session/cancel: not this run's output
    return { stopReason: "cancelled" };
  }
  if (has("[slow]")) {
    await say(client, sessionId, "first ");
    await sleep(300);
    await say(client, sessionId, "second");
    return { stopReason: "end_turn" };
  }
  if (has("[caps]")) {
    await say(client, sessionId, JSON.stringify(clientCapabilities));
    return { stopReason: "end_turn" };
  }
  if (has("[child]")) {
    const child = spawn("sleep", ["60"], { stdio: "ignore" });
    await say(client, sessionId, `child=${child.pid}`);
    return { stopReason: "end_turn" };
  }
  if (has("[daemon]")) {
    const daemon = spawn("sleep", ["60"], { stdio: "ignore", detached: true });
    daemon.unref();
    await say(client, sessionId, `daemon=${daemon.pid}`);
    return { stopReason: "end_turn" };
  }
  if (has("[secret]")) {
    const value = process.env.AGENT_API_TOKEN ?? "";
    const half = Math.floor(value.length / 2);
    await say(client, sessionId, `key: ${value.slice(0, half)}`);
    await say(client, sessionId, `${value.slice(half)} end`);
    return { stopReason: "end_turn" };
  }
  if (has("[whoami]")) {
    await say(client, sessionId, `pid=${process.pid} session=${sessionId} turn=${state.turn}`);
  } else if (has("[chunks]")) {
    for (const part of ["one ", "two ", "three"]) await say(client, sessionId, part);
  } else {
    await say(client, sessionId, `you said: ${text}`);
  }
  return { stopReason: "end_turn" };
}

let nextSession = 1;
const app = acp
  .agent({ name: "oma-interop-agent" })
  .onRequest(M.agent.initialize, async ({ params }) => {
    if (process.env.ACP_AGENT_EXIT_ON_INITIALIZE) {
      process.stderr.write("agent exiting during initialize\n");
      process.exit(2);
    }
    clientCapabilities = params.clientCapabilities;
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "oma-interop-agent", version: "0.0.0" },
      authMethods: process.env.ACP_AGENT_REFUSE_SESSION
        ? [{ id: "token", name: "Token", description: "a token from the vendor" }]
        : [],
    };
  })
  .onRequest(M.agent.session.new, async ({ params, client }) => {
    if (process.env.ACP_AGENT_REFUSE_SESSION) {
      throw acp.RequestError.authRequired(undefined, "log in first");
    }
    const sessionId = `sess-${nextSession++}`;
    sessions.set(sessionId, { turn: 0, used: 0, cancel: null, cwd: params.cwd });
    // Announced before any turn, as real agents do around session/new.
    await update(client, sessionId, {
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "review", description: "review the changes", input: null }],
    });
    return { sessionId };
  })
  .onRequest(M.agent.session.prompt, prompt)
  .onNotification(M.agent.session.cancel, async ({ params }) => {
    const state = sessions.get(params.sessionId);
    if (state && state.cancel) state.cancel();
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
process.exit(0);
