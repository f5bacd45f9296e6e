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
//   [rich]             text and thought chunks carrying optional fields (messageId,
//                      annotations, _meta) around an agent_message_chunk with no content
//                      (which the schema refuses); replies "alpha beta", stop end_turn
//   [tool]             a tool_call (pending) then tool_call_update (completed) with output
//   [failtool]         a tool call that ends with status failed
//   [toolkind]         a tool call whose in_progress tool_call_update changes its kind, then completes
//   [usage]            usage_update twice; context grows by 100*turn tokens this turn
//   [permission] / [permission:k1,k2]
//                      session/request_permission offering those option kinds
//                      (default all four, least privileged last); replies with the outcome
//   [custom-permission] session/request_permission for tool call "deploy-1" with options of
//                      its own ids and names (see CUSTOM_OPTIONS); replies
//                      "permission outcome: <optionId | cancelled>"
//   [fs] [terminal]    call fs/read_text_file or terminal/create; reply with the error code
//   [refuse]           stop with refusal; [max_tokens], [max_turn_requests] likewise
//   [crash]            stream a chunk, then exit(3) with a line on stderr
//   [garbage]          write a non-JSON line on stdout, then hang
//   [hang]             stream a chunk, wait for session/cancel, stream "late words", stop cancelled
//   [deaf]             stream a chunk, then never answer (ignores session/cancel)
//   [slow]             stream a chunk, wait 300 ms, stream another, then end_turn
//   [caps]             reply with the JSON of the clientCapabilities sent at initialize
//   [mcp]              reply with the JSON of the mcpServers sent in this session's session/new
//   [child]            start `sleep 60` (same process group) and reply "child=<pid>"
//   [daemon]           start `sleep 60` detached (setsid: a session of its own), reply "daemon=<pid>"
//   [secret]           stream "key: <$AGENT_API_TOKEN> end", the value split over two chunks
//   [future]           a session/update of a kind no schema knows, before the reply
//   [flood:N]          stream N chunks of 64 KiB of text each, then end_turn
// While opening a session it announces an available_commands_update (before any turn).
//   [history]          reply "history: " + the earlier prompts of this session joined by " | "
//                      (with ACP_AGENT_STATE_DIR, loaded sessions included)
//   [config]           reply "mode=<id> model=<id>" (the session's current choices)
//   [read:PATH]        fs/read_text_file PATH (line 2, limit 1 when PATH ends with "#2");
//                      reply "read: <text>" or "read: error <code>"
//   [authed]           reply "authenticated: <methodId | none>"
//   [write:PATH=TEXT]  fs/write_text_file PATH with TEXT; reply "write: ok" or "write: error <code>"
// Sessions, auth, config (tests/interop/test_acp_session.py):
// ACP_AGENT_STATE_DIR=dir keeps each session's prompts in dir/<id>.json and advertises
// loadSession: session/load replays them as user/agent message chunks;
// ACP_AGENT_LOGIN_VAR=NAME lists an "agent-login" method and an env_var method "api-key"
// needing NAME; session/new refuses until authenticate succeeds ("api-key" only with
// NAME set in its environment);
// ACP_AGENT_CONFIG=1 answers session/new with configOptions (mode, model) and legacy modes,
// and serves session/set_config_option and session/set_mode.
// Environment: ACP_AGENT_MARKER=path appends "pid" lines on start;
// ACP_AGENT_REFUSE_SESSION=1 makes session/new fail with "authentication required";
// ACP_AGENT_EXIT_ON_INITIALIZE=1 exits with code 2 while answering initialize;
// ACP_AGENT_MCP_HTTP=1 advertises agentCapabilities.mcpCapabilities.http.

import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
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

// Option ids and names no standard set has, so a client can tell they passed through.
const CUSTOM_OPTIONS = [
  { optionId: "ship-it", name: "Deploy this once", kind: "allow_once" },
  { optionId: "ship-always", name: "Always deploy to staging", kind: "allow_always" },
  { optionId: "hold-off", name: "Not now", kind: "reject_once" },
];

async function askCustomPermission(client, sessionId) {
  const toolCall = {
    toolCallId: "deploy-1",
    title: "Deploy to staging",
    kind: "execute",
    status: "pending",
    rawInput: { target: "staging" },
  };
  await update(client, sessionId, { sessionUpdate: "tool_call", ...toolCall });
  const answer = await client.request(M.client.session.requestPermission, {
    sessionId,
    toolCall,
    options: CUSTOM_OPTIONS,
  });
  const outcome = answer.outcome;
  return outcome.outcome === "selected" ? outcome.optionId : "cancelled";
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
  const extra = await extraMarkers(client, sessionId, state, text);
  if (extra) return extra;

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
  if (has("[rich]")) {
    await update(client, sessionId, {
      sessionUpdate: "agent_message_chunk",
      messageId: "m-1",
      content: { type: "text", text: "alpha ", annotations: { priority: 1 } },
    });
    await update(client, sessionId, { sessionUpdate: "agent_message_chunk" });
    await update(client, sessionId, {
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "hmm", _meta: { source: "agent.mjs" } },
    });
    await say(client, sessionId, "beta");
    return { stopReason: "end_turn" };
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
  if (has("[toolkind]")) {
    await update(client, sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "call-3",
      title: "Look at a.txt",
      kind: "read",
      status: "pending",
    });
    await update(client, sessionId, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call-3",
      kind: "edit",
      status: "in_progress",
    });
    await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-3", status: "completed" });
  }
  if (has("[custom-permission]")) {
    await say(client, sessionId, `permission outcome: ${await askCustomPermission(client, sessionId)}`);
    return { stopReason: "end_turn" };
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
  const flood = /\[flood:(\d+)\]/.exec(text);
  if (flood) {
    const chunk = "x".repeat(65536);
    for (let index = 0; index < Number(flood[1]); index++) await say(client, sessionId, chunk);
    return { stopReason: "end_turn" };
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
  if (has("[mcp]")) {
    await say(client, sessionId, JSON.stringify(state.mcpServers));
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

// -- sessions kept on disk, login, config options (see the header) --
const STATE_DIR = process.env.ACP_AGENT_STATE_DIR;
const AUTH_VAR = process.env.ACP_AGENT_LOGIN_VAR;
let authedWith = null;
const MODES = [
  { value: "ask", name: "Ask" },
  { value: "code", name: "Code" },
];
const MODELS = [
  { value: "small", name: "Small model" },
  { value: "large", name: "Large model" },
];

function configOptions(state) {
  return [
    { id: "mode", name: "Mode", category: "mode", type: "select", currentValue: state.mode, options: MODES },
    { id: "model", name: "Model", category: "model", type: "select", currentValue: state.model, options: MODELS },
  ];
}

function legacyModes(state) {
  return { currentModeId: state.mode, availableModes: MODES.map((m) => ({ id: m.value, name: m.name })) };
}

function saveSession(sessionId, state) {
  if (STATE_DIR) writeFileSync(`${STATE_DIR}/${sessionId}.json`, JSON.stringify(state.prompts));
}

async function extraMarkers(client, sessionId, state, text) {
  state.prompts = state.prompts ?? [];
  const earlier = state.prompts.slice();
  state.prompts.push(text);
  saveSession(sessionId, state);
  let reply = null;
  if (text.includes("[history]")) reply = `history: ${earlier.join(" | ")}`;
  else if (text.includes("[config]")) reply = `mode=${state.mode} model=${state.model}`;
  else if (text.includes("[authed]")) reply = `authenticated: ${authedWith ?? "none"}`;
  else if (text.includes("[read:")) {
    const path = /\[read:([^\]]+)\]/.exec(text)[1];
    const params = { sessionId, path };
    if (path.endsWith("#2")) Object.assign(params, { path: path.slice(0, -2), line: 2, limit: 1 });
    try {
      const answer = await client.request(M.client.fs.readTextFile, params);
      reply = `read: ${answer.content}`;
    } catch (error) {
      reply = `read: error ${error.code}`;
    }
  }
  else if (text.includes("[write:")) {
    const [, path, content] = /\[write:([^=\]]+)=([^\]]*)\]/.exec(text);
    reply = `write: ${await callClient(client, M.client.fs.writeTextFile, { sessionId, path, content })}`;
  }
  if (reply === null) return null;
  await say(client, sessionId, reply);
  return { stopReason: "end_turn" };
}

const extraAuthMethods = AUTH_VAR
  ? [
      { id: "agent-login", name: "Agent login", description: "log in with the agent's own tool" },
      { id: "api-key", name: "API key", type: "env_var", vars: [{ name: AUTH_VAR }] },
    ]
  : [];

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
      agentCapabilities: {
        loadSession: Boolean(STATE_DIR),
        mcpCapabilities: { http: Boolean(process.env.ACP_AGENT_MCP_HTTP), sse: false },
      },
      agentInfo: { name: "oma-interop-agent", version: "0.0.0" },
      authMethods: process.env.ACP_AGENT_REFUSE_SESSION
        ? [{ id: "token", name: "Token", description: "a token from the vendor" }]
        : extraAuthMethods,
    };
  })
  .onRequest(M.agent.session.new, async ({ params, client }) => {
    if (process.env.ACP_AGENT_REFUSE_SESSION) {
      throw acp.RequestError.authRequired(undefined, "log in first");
    }
    if (AUTH_VAR && !authedWith) throw acp.RequestError.authRequired(undefined, "log in first");
    const sessionId = STATE_DIR ? `sess-${process.pid}-${nextSession++}` : `sess-${nextSession++}`;
    sessions.set(sessionId, {
      turn: 0,
      used: 0,
      cancel: null,
      cwd: params.cwd,
      mcpServers: params.mcpServers,
    });
    const state = Object.assign(sessions.get(sessionId), { prompts: [], mode: "ask", model: "small" });
    saveSession(sessionId, state);
    // Announced before any turn, as real agents do around session/new.
    await update(client, sessionId, {
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "review", description: "review the changes", input: null }],
    });
    if (process.env.ACP_AGENT_CONFIG) {
      return { sessionId, configOptions: configOptions(state), modes: legacyModes(state) };
    }
    return { sessionId };
  })
  .onRequest(M.agent.authenticate, async ({ params }) => {
    if (params.methodId === "api-key" && !process.env[AUTH_VAR]) {
      throw acp.RequestError.authRequired(undefined, `${AUTH_VAR} is not set`);
    }
    authedWith = params.methodId;
    return {};
  })
  .onRequest(M.agent.session.load, async ({ params, client }) => {
    const path = `${STATE_DIR}/${params.sessionId}.json`;
    if (!STATE_DIR || !existsSync(path)) throw acp.RequestError.resourceNotFound(params.sessionId);
    const state = { turn: 0, used: 0, cancel: null, cwd: params.cwd, mode: "ask", model: "small" };
    state.prompts = JSON.parse(readFileSync(path, "utf8"));
    sessions.set(params.sessionId, state);
    for (const text of state.prompts) {
      await update(client, params.sessionId, { sessionUpdate: "user_message_chunk", content: { type: "text", text } });
      await say(client, params.sessionId, `replayed: ${text}`);
    }
    return process.env.ACP_AGENT_CONFIG ? { configOptions: configOptions(state), modes: legacyModes(state) } : {};
  })
  .onRequest(M.agent.session.setConfigOption, async ({ params }) => {
    const state = sessions.get(params.sessionId);
    if (!state) throw acp.RequestError.sessionNotFound(params.sessionId);
    const choices = { mode: MODES, model: MODELS }[params.configId];
    if (!choices || !choices.some((c) => c.value === params.value)) {
      throw acp.RequestError.invalidParams(undefined, `no ${params.configId} ${params.value}`);
    }
    state[params.configId] = params.value;
    return { configOptions: configOptions(state) };
  })
  .onRequest(M.agent.session.setMode, async ({ params }) => {
    const state = sessions.get(params.sessionId);
    if (!state) throw acp.RequestError.sessionNotFound(params.sessionId);
    state.mode = params.modeId;
    return {};
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
