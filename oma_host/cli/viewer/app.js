// The run viewer's page: the list of runs with its filters, and the run
// chosen (``#run=ID`` in the address, so back and forward move between
// runs) as its summary, its tasks' graph when it is a team run, its
// timeline, and a step's detail. Reads the viewer's JSON API; the browser
// sends the viewer's cookie with each request.

import { el, clear, formatTime, formatMs, formatCount, formatCost, statusBadge } from "./dom.js";
import { renderTimeline, markSelected, flatten, earliestStart } from "./timeline.js";
import { renderGraph, tasksOf } from "./graph.js";
import { renderDetail, evaluationTable } from "./detail.js";

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

function runRow(run) {
  const tokens = run.inputTokens + run.outputTokens;
  const cache = [];
  if (run.cacheReadTokens) cache.push(`${formatCount(run.cacheReadTokens)} read from cache`);
  if (run.cacheCreationTokens) cache.push(`${formatCount(run.cacheCreationTokens)} written to cache`);
  const open = () => {
    location.hash = `run=${encodeURIComponent(run.runId)}`;
  };
  return el(
    "tr",
    {
      cls: `run-row${run.runId === shownRunId ? " selected" : ""}`,
      attrs: { tabindex: "0", "data-run-id": run.runId },
      on: {
        click: open,
        keydown: (event) => {
          if (event.key === "Enter") open();
        },
      },
    },
    el("td", { text: formatTime(run.started) }),
    el("td", { cls: "agent", text: run.agent }),
    el("td", {}, statusBadge(run.status)),
    el("td", { cls: "num", text: run.turns ?? "-" }),
    el("td", {
      cls: "num",
      text: formatCount(tokens),
      title: [`${formatCount(run.inputTokens)} in, ${formatCount(run.outputTokens)} out`, ...cache].join("; "),
    }),
    el("td", { cls: "num", text: formatCost(run.costUsd) }),
    el("td", { cls: "num", text: formatMs(run.durationMs) }),
    el("td", { cls: "run-id", text: run.runId, title: run.runId }),
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
  for (const run of document_.runs) body.appendChild(runRow(run));
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
  if (run.sessionId) pairs.push(["Session", run.sessionId]);
  if (run.error) pairs.push(["Error", `${run.errorKind ? `${run.errorKind}: ` : ""}${run.error}`]);
  return [
    el("h2", {}, el("span", { cls: "agent", text: run.agent }), " ", statusBadge(run.status)),
    el("dl", { cls: "facts" }, ...pairs.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: String(value) })])),
    evaluations.length ? el("div", {}, el("h3", { text: "Evaluation scores" }), evaluationTable(evaluations)) : null,
  ];
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
  };
  const head = byId("run-summary");
  clear(head);
  for (const part of summary(run, evaluations)) if (part) head.appendChild(part);
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
