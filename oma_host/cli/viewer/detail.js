// One step's detail, in the side panel: what it was, when, its outcome and
// error, the permission decision and stored input of a tool call, the run's
// evaluation scores on its top span, and every attribute.

import { el, clear, asText, formatMs, statusBadge } from "./dom.js";

const PERMISSION_DECISION = "oma.permission.decision";
const PERMISSION_BY = "oma.permission.by";
const PERMISSION_RULE = "oma.permission.rule";
const ERROR_TYPE = "error.type";
const TOOL_INPUT = "toolInput";

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
  if (attributes[PERMISSION_DECISION] !== undefined) {
    const rule = attributes[PERMISSION_RULE];
    const by = attributes[PERMISSION_BY];
    const text = `${attributes[PERMISSION_DECISION]}${by ? ` by ${by}` : ""}${rule ? ` (rule ${asText(rule)})` : ""}`;
    box.appendChild(section("Permission", el("p", { cls: `permission permission-${attributes[PERMISSION_DECISION] === "allow" ? "allow" : "deny"}`, text })));
  }
  if (stored[TOOL_INPUT] !== undefined) {
    box.appendChild(section("Tool input", el("pre", { cls: "tool-input", text: asText(stored[TOOL_INPUT]) })));
  }
  const others = Object.entries(stored).filter(([name]) => name !== TOOL_INPUT);
  if (others.length) {
    box.appendChild(section("Stored", facts(others.map(([name, value]) => [name, asText(value)]))));
  }
  if (span.parentId === null && evaluations.length) {
    box.appendChild(section("Evaluation scores", evaluationTable(evaluations)));
  }
  const names = Object.keys(attributes).sort();
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
