// One step's detail, in the side panel: what it was, when, its outcome and
// error (a task's reason), the permission decision and stored input of a
// tool call, its captured content shown readably (the messages in, the
// reply, a tool call's arguments and result), the run's evaluation scores
// on its top span, and every other attribute.

import { el, clear, asText, formatMs, statusBadge } from "./dom.js";
import {
  CONTENT_ATTRIBUTES,
  INPUT_MESSAGES,
  OUTPUT_MESSAGES,
  TOOL_ARGUMENTS,
  TOOL_RESULT,
  contentElement,
  parsed,
} from "./conversation.js";

const PERMISSION_DECISION = "oma.permission.decision";
const PERMISSION_BY = "oma.permission.by";
const PERMISSION_RULE = "oma.permission.rule";
const ERROR_TYPE = "error.type";
const TOOL_INPUT = "toolInput";
const TASK_REASON = "taskReason";

function section(title, ...content) {
  return el("section", { cls: `detail-section` }, el("h3", { text: title }), ...content);
}

function facts(pairs) {
  return el(
    "dl",
    { cls: "facts" },
    ...pairs.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]),
  );
}

/** The run's evaluation scores as a table (also in the run's summary). */
export function evaluationTable(evaluations) {
  return el(
    "table",
    { cls: "evaluations" },
    el("thead", {}, el("tr", {}, el("th", { text: "Scorer" }), el("th", { text: "Score" }), el("th", { text: "Reason" }))),
    el(
      "tbody",
      {},
      ...evaluations.map((record) =>
        el(
          "tr",
          {},
          el("td", { text: record.scorer }),
          el("td", { cls: "num", text: record.score === null ? "-" : String(record.score) }),
          el("td", { text: record.reason ?? "" }),
        ),
      ),
    ),
  );
}

/** Show ``span`` of ``run`` (started ``runStartNs``) in ``box``. */
export function renderDetail(box, span, run, evaluations, runStartNs) {
  clear(box);
  box.hidden = false;
  const attributes = span.attributes || {};
  const stored = span.stored || {};
  const length = ((span.endNs ?? span.startNs) - span.startNs) / 1e6;
  box.appendChild(
    el(
      "header",
      {},
      el("h2", { cls: "detail-name", text: span.name }),
      statusBadge(span.status),
      el("button", {
        cls: "close",
        text: "×",
        title: "Close",
        attrs: { type: "button", "aria-label": "Close the detail" },
        on: { click: () => (box.hidden = true) },
      }),
    ),
  );
  box.appendChild(
    facts([
      ["Operation", span.operation],
      ["Started", `+${formatMs((span.startNs - runStartNs) / 1e6)}`],
      ["Duration", formatMs(length)],
      ["Run", span.runId ?? "-"],
      ["Span", span.spanId],
    ]),
  );
  const error = attributes[ERROR_TYPE];
  if (error !== undefined || span.status === "error") {
    const lines = [el("p", { cls: "error-type", text: error ?? span.status })];
    if (span.parentId === null && run.error) lines.push(el("pre", { cls: "error-text", text: run.error }));
    box.appendChild(section("Error", ...lines));
  }
  if (stored[TASK_REASON] !== undefined) {
    const title = span.status === "skipped" ? "Why it was skipped" : "Why it failed";
    box.appendChild(section(title, el("pre", { cls: "task-reason", text: asText(stored[TASK_REASON]) })));
  }
  if (attributes[PERMISSION_DECISION] !== undefined) {
    const rule = attributes[PERMISSION_RULE];
    const by = attributes[PERMISSION_BY];
    const text = `${attributes[PERMISSION_DECISION]}${by ? ` by ${by}` : ""}${rule ? ` (rule ${asText(rule)})` : ""}`;
    box.appendChild(section("Permission", el("p", { cls: `permission permission-${attributes[PERMISSION_DECISION] === "allow" ? "allow" : "deny"}`, text })));
  }
  if (stored[TOOL_INPUT] !== undefined) {
    box.appendChild(section("Tool input", el("pre", { cls: "tool-input", text: asText(stored[TOOL_INPUT]) })));
  } else if (attributes[TOOL_ARGUMENTS] !== undefined) {
    box.appendChild(section("Tool input", el("pre", { cls: "tool-input", text: asText(parsed(attributes[TOOL_ARGUMENTS]).data) })));
  }
  if (attributes[TOOL_RESULT] !== undefined) {
    const failed = span.status === "error";
    box.appendChild(
      section(failed ? "Tool error" : "Tool result", el("pre", { cls: `tool-output${failed ? " is-error" : ""}`, text: asText(parsed(attributes[TOOL_RESULT]).data) })),
    );
  }
  if (attributes[INPUT_MESSAGES] !== undefined) {
    box.appendChild(section("Messages in", contentElement(attributes[INPUT_MESSAGES])));
  }
  if (attributes[OUTPUT_MESSAGES] !== undefined) {
    box.appendChild(section("Reply", contentElement(attributes[OUTPUT_MESSAGES], "Reply")));
  }
  const others = Object.entries(stored).filter(([name]) => name !== TOOL_INPUT && name !== TASK_REASON);
  if (others.length) {
    box.appendChild(section("Stored", facts(others.map(([name, value]) => [name, asText(value)]))));
  }
  if (span.parentId === null && evaluations.length) {
    box.appendChild(section("Evaluation scores", evaluationTable(evaluations)));
  }
  const names = Object.keys(attributes)
    .filter((name) => !CONTENT_ATTRIBUTES.has(name)) // shown above, readably
    .sort();
  box.appendChild(
    section(
      "Attributes",
      el(
        "table",
        { cls: "attributes" },
        el(
          "tbody",
          {},
          ...names.map((name) =>
            el("tr", {}, el("th", { text: name }), el("td", {}, el("code", { text: asText(attributes[name]) }))),
          ),
        ),
      ),
    ),
  );
}
