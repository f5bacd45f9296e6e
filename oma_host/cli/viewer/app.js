// The run viewer's page: the list of runs with its filters (the runs of
// one session grouped under it, each run with what it was asked when the
// store holds it), and the run chosen (``#run=ID`` in the address, so back
// and forward move between runs) as its summary (and why it failed), its
// captured conversation, its tasks' graph when it is a team run, its
// timeline, and a step's detail. Reads the viewer's JSON API; the browser
// sends the viewer's cookie with each request.

import { el, clear, formatTime, formatMs, formatCount, formatCost, statusBadge } from "./dom.js";
import { renderTimeline, markSelected, flatten, earliestStart } from "./timeline.js";
import { renderGraph, tasksOf } from "./graph.js";
import { renderDetail, evaluationTable } from "./detail.js";
import { conversation } from "./conversation.js";

const byId = (id) => document.getElementById(id);
const TEXT_DELAY_MS = 250;
const LIMIT = 200; // the newest runs the list shows (the filters reach older ones)
let listGeneration = 0;
let runGeneration = 0;
let shownRunId = null;

class ApiError extends Error {}

async function getJson(path) {
  const response = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (response.status === 401 || response.status === 403) {
    throw new ApiError("The viewer wants its token again: open the URL oma-host runs serve printed.");
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(body?.error ?? `${response.status} ${response.statusText}`);
  return body;
}

function say(text, isError = false) {
  const state = byId("load-state");
  state.textContent = text;
  state.classList.toggle("error", isError);
}

function fillChoices(select, values) {
  const chosen = select.value;
  clear(select);
  select.appendChild(el("option", { text: "all", attrs: { value: "" } }));
  for (const value of values) select.appendChild(el("option", { text: value, attrs: { value } }));
  select.value = values.includes(chosen) ? chosen : "";
}

const COLUMNS = 9; // of the runs table (index.html)
const WIDE_FACTS = new Set(["Run", "Session", "Started", "Tokens", "Cache"]); // two cells of the summary's grid
// Where the page lays the detail below the timeline (viewer.css's breakpoint).
const NARROW = window.matchMedia("(max-width: 1100px)");

function runRow(run, inSession) {
  const tokens = run.inputTokens + run.outputTokens;
  const cache = [];
  if (run.cacheReadTokens) cache.push(`${formatCount(run.cacheReadTokens)} read from cache`);
  if (run.cacheCreationTokens) cache.push(`${formatCount(run.cacheCreationTokens)} written to cache`);
  const open = () => {
    location.hash = `run=${encodeURIComponent(run.runId)}`;
  };
  const asked = run.prompt ?? (inSession ? null : run.sessionTitle);
  const why = run.error ? `${run.errorKind ? `${run.errorKind}: ` : ""}${run.error}` : null;
  return el(
    "tr",
    {
      cls: `run-row${run.runId === shownRunId ? " selected" : ""}${inSession ? " in-session" : ""}`,
      attrs: { tabindex: "0", "data-run-id": run.runId },
      on: {
        click: open,
        keydown: (event) => {
          if (event.key === "Enter") open();
        },
      },
    },
    el("td", { cls: "started", text: formatTime(run.started) }),
    el("td", { cls: "agent", text: run.agent, title: run.agent }),
    el(
      "td",
      { cls: `prompt${asked ? "" : " none"}`, title: [asked, why].filter(Boolean).join("\n") || null },
      asked ?? run.method,
    ),
    el("td", { cls: "status" }, statusBadge(run.status)),
    el("td", { cls: "num turns", text: run.turns ?? "-" }),
    el("td", {
      cls: "num tokens",
      text: formatCount(tokens),
      title: [`${formatCount(run.inputTokens)} in, ${formatCount(run.outputTokens)} out`, ...cache].join("; "),
    }),
    el("td", { cls: "num cost", text: formatCost(run.costUsd) }),
    el("td", { cls: "num duration", text: formatMs(run.durationMs) }),
    el("td", { cls: "run-id", text: run.runId, title: run.runId }),
  );
}

/** The runs (newest first) as groups: the runs of one session together,
 * at the place of its newest run; a run of no session alone. */
function groups(runs) {
  const order = [];
  const bySession = new Map();
  for (const run of runs) {
    if (!run.sessionId) {
      order.push({ session: null, runs: [run] });
      continue;
    }
    let group = bySession.get(run.sessionId);
    if (!group) {
      group = { session: run.sessionId, title: null, runs: [] };
      bySession.set(run.sessionId, group);
      order.push(group);
    }
    group.runs.push(run);
    group.title ||= run.sessionTitle;
  }
  return order;
}

function sessionRow(group) {
  const count = `${group.runs.length} run${group.runs.length === 1 ? "" : "s"}`;
  return el(
    "tr",
    { cls: "session-row", attrs: { "data-session-id": group.session } },
    el(
      "th",
      { attrs: { colspan: String(COLUMNS), scope: "rowgroup" } },
      el("span", { cls: "session-label", text: "Session" }),
      " ",
      el("span", { cls: "session-id", text: group.session }),
      group.title ? el("span", { cls: "session-title", text: group.title }) : null,
      el("span", { cls: "session-count", text: count }),
    ),
  );
}

async function loadRuns() {
  const generation = ++listGeneration;
  const query = new URLSearchParams({ limit: String(LIMIT) });
  for (const [name, id] of [["agent", "filter-agent"], ["status", "filter-status"], ["text", "filter-text"]]) {
    const value = byId(id).value.trim();
    if (value) query.set(name, value);
  }
  say("Loading runs…");
  let document_;
  try {
    document_ = await getJson(`/api/runs?${query}`);
  } catch (error) {
    if (generation === listGeneration) say(error.message, true);
    return;
  }
  if (generation !== listGeneration) return; // a newer filter's answer is coming
  fillChoices(byId("filter-agent"), document_.agents);
  fillChoices(byId("filter-status"), document_.statuses);
  const body = byId("runs").tBodies[0];
  clear(body);
  for (const group of groups(document_.runs)) {
    if (group.session !== null) body.appendChild(sessionRow(group));
    for (const run of group.runs) body.appendChild(runRow(run, group.session !== null));
  }
  byId("runs-empty").hidden = document_.runs.length > 0;
  const count = document_.runs.length;
  say(count === LIMIT ? `the newest ${LIMIT} runs (filter for older ones)` : `${count} run${count === 1 ? "" : "s"}`);
}

function summary(run, evaluations) {
  const pairs = [
    ["Run", run.runId],
    ["Method", run.method],
    ["Started", formatTime(run.started)],
    ["Duration", formatMs(run.durationMs)],
    ["Turns", run.turns ?? "-"],
    ["Tokens", `${formatCount(run.inputTokens)} in / ${formatCount(run.outputTokens)} out`],
    ["Cost", formatCost(run.costUsd)],
  ];
  if (run.cacheReadTokens || run.cacheCreationTokens) {
    pairs.push(["Cache", `${formatCount(run.cacheReadTokens ?? 0)} read / ${formatCount(run.cacheCreationTokens ?? 0)} written`]);
  }
  if (run.model) pairs.push(["Model", run.model]);
  if (run.sessionId) pairs.push(["Session", run.sessionTitle ? `${run.sessionId} (${run.sessionTitle})` : run.sessionId]);
  const failure = run.error || run.errorKind
    ? el(
        "div",
        { cls: "run-error", attrs: { role: "alert" } },
        el("span", { cls: "error-kind", text: run.errorKind ?? run.status }),
        el("p", { cls: "error-message", text: run.error ?? "" }),
      )
    : null;
  return [
    el("h2", {}, el("span", { cls: "agent", text: run.agent }), " ", statusBadge(run.status)),
    failure,
    el(
      "dl",
      { cls: "run-facts" },
      ...pairs.map(([name, value]) =>
        el("div", { cls: WIDE_FACTS.has(name) ? "wide" : null }, el("dt", { text: name }), el("dd", { text: String(value) })),
      ),
    ),
    evaluations.length ? el("div", {}, el("h3", { text: "Evaluation scores" }), evaluationTable(evaluations)) : null,
  ];
}

/** The run's conversation section: what content capture recorded, or how to record it. */
function conversationSection(box, roots, select) {
  clear(box);
  const root = roots.length === 1 ? roots[0] : null;
  const shown = root && root.operation === "invoke_agent" ? conversation(root, select) : null;
  box.hidden = root?.operation === "invoke_workflow"; // a team's: each task's run has its own
  box.appendChild(el("h2", { text: "Conversation" }));
  if (shown) {
    box.appendChild(shown);
  } else {
    box.appendChild(
      el("p", {
        cls: "hint",
        text:
          "No message text was recorded for this run. Content capture records the prompt, the " +
          "replies and the tool results in the state directory: oma-host acp " +
          "--telemetry-capture-content true, or initializationOptions.telemetry " +
          '{"export": false, "captureContent": true} (docs/telemetry.md).',
      }),
    );
  }
}

async function showRun(runId) {
  const generation = ++runGeneration;
  shownRunId = runId;
  for (const row of document.querySelectorAll(".run-row")) {
    row.classList.toggle("selected", row.getAttribute("data-run-id") === runId);
  }
  const pane = byId("run-pane");
  const detail = byId("detail");
  if (runId === null) {
    pane.hidden = true;
    detail.hidden = true;
    return;
  }
  let document_;
  try {
    document_ = await getJson(`/api/runs/${encodeURIComponent(runId)}`);
  } catch (error) {
    if (generation === runGeneration) say(error.message, true);
    return;
  }
  if (generation !== runGeneration) return;
  const { run, spans, evaluations } = document_;
  const all = flatten(spans).map(([, span]) => span);
  const runStartNs = all.length ? earliestStart(all) : 0;
  const timeline = byId("timeline");
  const select = (span) => {
    markSelected(timeline, span.spanId);
    renderDetail(detail, span, run, evaluations, runStartNs);
    if (NARROW.matches) detail.scrollIntoView({ block: "nearest" });
  };
  const head = byId("run-summary");
  clear(head);
  for (const part of summary(run, evaluations)) if (part) head.appendChild(part);
  conversationSection(byId("conversation"), spans, select);
  const tasks = tasksOf(all);
  byId("graph-box").hidden = tasks.length === 0;
  if (tasks.length) renderGraph(byId("graph"), tasks, select);
  else clear(byId("graph"));
  renderTimeline(timeline, spans, select);
  detail.hidden = true;
  pane.hidden = false;
  pane.dataset.runId = run.runId; // the run shown, whole
}

function runFromHash() {
  const match = /^#run=(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

function start() {
  let typing = null;
  byId("filters").addEventListener("submit", (event) => event.preventDefault());
  byId("filter-agent").addEventListener("change", loadRuns);
  byId("filter-status").addEventListener("change", loadRuns);
  byId("filter-text").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(loadRuns, TEXT_DELAY_MS);
  });
  window.addEventListener("hashchange", () => showRun(runFromHash()));
  loadRuns();
  showRun(runFromHash());
}

start();
