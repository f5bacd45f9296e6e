// A scripted ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk),
// the independent peer for the tests of `oma-host acp`.
//
// Usage: node client.mjs SCRIPT.json -- COMMAND [ARGS...]
// It spawns COMMAND as the ACP agent, sends each step of SCRIPT in order, and prints
// one JSON document on stdout: {steps: [{method, result | error, updates}], notifications,
// stderr}, where notifications are every session/update's params in the order they came.
//
// SCRIPT: {permission?: optionKind, permissionOptionId?: id, files?: {path: text},
//          refuseWrites?: bool | data, steps: [{method, params, cancelAfterChunks?, cancelOnUpdate?}]}
//   - the string "$session" anywhere in params is the sessionId of the latest
//     session/new answer; a step with `saveAs: NAME` keeps its answer's
//     sessionId (session/fork's) as "$NAME" for the steps after it;
//   - cancelAfterChunks: n sends session/cancel once n agent_message_chunk updates
//     of this step have arrived;
//   - cancelOnUpdate: kind sends session/cancel when the step's first update of that
//     sessionUpdate kind carrying content arrives;
//   - updates: the session/update notifications that arrived during the step;
//   - permission requests are answered with the option whose optionId is
//     `permissionOptionId`, else the option of kind `permission` (cancelled when
//     neither is offered), and recorded in the step's updates as
//     {permissionRequest: params};
//   - fs/read_text_file requests are answered with `files[path]` (the editor's
//     buffer; a path not there is an error -32002) and recorded in the step's
//     updates as {readTextFile: params}. The client declares fs.readTextFile
//     only if the script's initialize step does;
//   - fs/write_text_file requests are recorded as {writeTextFile: params} and
//     put the content in `files[path]` (the buffer; the disk is not touched),
//     or, with refuseWrites, answered with an error -32603 (refuseWrites an object:
//     that error's data, as acpx gives {details: "Permission denied ..."});
//   - terminal/* requests are served for real: terminal/create spawns the command
//     (its env entries over the client's own environment, in a process group of
//     its own) and keeps its stdout and stderr within outputByteLimit (cut from
//     the beginning); wait_for_exit answers when it has exited, output with what
//     is kept, kill ends its group, release ends it if running and forgets it.
//     Each is recorded in the step's updates as {terminalRequest: {method,
//     params}} and in `terminalRequests` of the output, in arrival order. The
//     client declares `terminal` only if the script's initialize step does;
//   - cancelOnTerminal: true sends session/cancel as soon as an update embeds a
//     terminal ({type: "terminal"} content) during the step.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const M = acp.methods;
const [scriptPath, separator, command, ...args] = process.argv.slice(2);
if (separator !== "--" || !command) {
  console.error("usage: node client.mjs SCRIPT.json -- COMMAND [ARGS...]");
  process.exit(2);
}
const script = JSON.parse(readFileSync(scriptPath, "utf8"));

const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
child.stderr.on("data", (chunk) => {
  stderr += chunk;
});

let current = null; // {updates, chunks, onChunk, onUpdate}
const notifications = []; // every session/update, in order, between steps too
const terminalRequests = []; // every terminal/* request, in order
const terminals = new Map(); // terminalId -> {child, output, truncated, limit, status, closed}

function terminalRequest(method, params) {
  terminalRequests.push({ method, params });
  if (current !== null) current.updates.push({ terminalRequest: { method, params } });
  const terminal = terminals.get(params.terminalId);
  if (method !== M.client.terminal.create && terminal === undefined) {
    throw acp.RequestError.invalidParams(undefined, `no terminal ${params.terminalId}`);
  }
  return terminal;
}

function endGroup(terminal) {
  if (terminal.status === null) {
    try {
      process.kill(-terminal.child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

function createTerminal(params) {
  const env = { ...process.env };
  for (const { name, value } of params.env ?? []) env[name] = value;
  const child = spawn(params.command, params.args ?? [], {
    cwd: params.cwd ?? undefined,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const terminal = {
    child,
    output: "",
    truncated: false,
    limit: params.outputByteLimit ?? null,
    status: null,
  };
  const keep = (chunk) => {
    terminal.output += chunk;
    const bytes = Buffer.from(terminal.output);
    if (terminal.limit !== null && bytes.length > terminal.limit) {
      // Cut from the beginning, at a character boundary.
      terminal.output = bytes
        .subarray(bytes.length - terminal.limit)
        .toString("utf8")
        .replace(/^\uFFFD+/, "");
      terminal.truncated = true;
    }
  };
  child.stdout.setEncoding("utf8").on("data", keep);
  child.stderr.setEncoding("utf8").on("data", keep);
  terminal.closed = new Promise((resolve) => {
    child.on("close", (code, signal) => {
      terminal.status = { exitCode: code, signal };
      resolve(terminal.status);
    });
  });
  const terminalId = `term-${terminals.size + 1}`;
  terminals.set(terminalId, terminal);
  return { terminalId };
}

const app = acp
  .client({ name: "oma-host-acp-door-test" })
  .onNotification(M.client.session.update, async ({ params }) => {
    notifications.push(params);
    if (current === null) return;
    current.updates.push(params.update);
    if (current.onUpdate) current.onUpdate(params.update);
    if (params.update.sessionUpdate === "agent_message_chunk") {
      current.chunks += 1;
      if (current.onChunk) current.onChunk(current.chunks);
    }
  })
  .onRequest(M.client.session.requestPermission, async ({ params }) => {
    if (current !== null) current.updates.push({ permissionRequest: params });
    const option =
      params.options.find((o) => o.optionId === script.permissionOptionId) ??
      params.options.find((o) => o.kind === script.permission);
    if (!option) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(M.client.fs.readTextFile, async ({ params }) => {
    if (current !== null) current.updates.push({ readTextFile: params });
    const text = (script.files ?? {})[params.path];
    if (text === undefined) throw acp.RequestError.resourceNotFound(params.path);
    return { content: text };
  })
  .onRequest(M.client.fs.writeTextFile, async ({ params }) => {
    if (current !== null) current.updates.push({ writeTextFile: params });
    if (script.refuseWrites === true) throw acp.RequestError.internalError(undefined, "read-only buffer");
    if (script.refuseWrites) throw acp.RequestError.internalError(script.refuseWrites);
    script.files = { ...(script.files ?? {}), [params.path]: params.content };
    return {};
  })
  .onRequest(M.client.terminal.create, async ({ params }) => {
    terminalRequest(M.client.terminal.create, params);
    return createTerminal(params);
  })
  .onRequest(M.client.terminal.waitForExit, async ({ params }) => {
    return await terminalRequest(M.client.terminal.waitForExit, params).closed;
  })
  .onRequest(M.client.terminal.output, async ({ params }) => {
    const terminal = terminalRequest(M.client.terminal.output, params);
    const answer = { output: terminal.output, truncated: terminal.truncated };
    if (terminal.status !== null) answer.exitStatus = terminal.status;
    return answer;
  })
  .onRequest(M.client.terminal.kill, async ({ params }) => {
    endGroup(terminalRequest(M.client.terminal.kill, params));
    return {};
  })
  .onRequest(M.client.terminal.release, async ({ params }) => {
    endGroup(terminalRequest(M.client.terminal.release, params));
    terminals.delete(params.terminalId);
    return {};
  });

function substitute(value, saved) {
  if (typeof value === "string" && value.startsWith("$") && value.slice(1) in saved) {
    return saved[value.slice(1)];
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, saved));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, substitute(item, saved)]),
    );
  }
  return value;
}

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const steps = [];
try {
  await app.connectWith(stream, async (ctx) => {
    const saved = {};
    for (const step of script.steps) {
      const params = substitute(step.params ?? {}, saved);
      current = { updates: [], chunks: 0, onChunk: null, onUpdate: null };
      if (step.cancelOnTerminal) {
        let sent = false;
        current.onUpdate = (update) => {
          const content = Array.isArray(update.content) ? update.content : [];
          if (!sent && content.some((item) => item.type === "terminal")) {
            sent = true;
            ctx.notify(M.agent.session.cancel, { sessionId: params.sessionId });
          }
        };
      }
      if (step.cancelAfterChunks !== undefined) {
        current.onChunk = (count) => {
          if (count === step.cancelAfterChunks) {
            ctx.notify(M.agent.session.cancel, { sessionId: params.sessionId });
          }
        };
      }
      if (step.cancelOnUpdate !== undefined) {
        current.onUpdate = (update) => {
          if (update.sessionUpdate === step.cancelOnUpdate && update.content) {
            current.onUpdate = null;
            ctx.notify(M.agent.session.cancel, { sessionId: params.sessionId });
          }
        };
      }
      const record = { method: step.method };
      try {
        record.result = await ctx.request(step.method, params);
        if (step.method === M.agent.session.new) saved.session = record.result.sessionId;
        if (step.saveAs !== undefined) saved[step.saveAs] = record.result.sessionId;
      } catch (error) {
        record.error = { code: error.code, message: error.message, data: error.data };
      }
      record.updates = current.updates;
      current = null;
      steps.push(record);
    }
  });
} finally {
  child.stdin.end();
  await new Promise((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.on("exit", resolve);
  });
  for (const terminal of terminals.values()) endGroup(terminal);
  process.stdout.write(
    JSON.stringify({ steps, notifications, terminalRequests, stderr, exitCode: child.exitCode }),
  );
}
