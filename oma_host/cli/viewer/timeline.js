// A run's spans as a timeline: one row per span, nested under its parent
// (the label indented by depth), its bar placed on a time axis that runs
// from the first span's start to the last one's end.

import { el, clear, formatMs } from "./dom.js";

// Operations with a colour of their own (viewer.css: .op-NAME).
const OPERATIONS = new Set([
  "invoke_agent",
  "chat",
  "execute_tool",
  "compaction",
  "delegation",
  "invoke_workflow",
  "task",
]);

/** The span tree (nodes with children) as [depth, span] rows, parents first. */
export function flatten(nodes, depth = 0, rows = []) {
  for (const node of nodes) {
    rows.push([depth, node]);
    flatten(node.children, depth + 1, rows);
  }
  return rows;
}

export function operationClass(operation) {
  return OPERATIONS.has(operation) ? `op-${operation}` : "op-other";
}

/** The first start among ``spans`` (a loop: a run may have more spans than
 * a spread's arguments may be). */
export function earliestStart(spans) {
  return spans.reduce((first, span) => Math.min(first, span.startNs), Infinity);
}

/** Nanoseconds as milliseconds (epoch nanoseconds exceed a double's exact
 * integers; the differences here are exact to well under a microsecond). */
function msBetween(fromNs, toNs) {
  return (toNs - fromNs) / 1e6;
}

function niceStep(totalMs, wanted) {
  const raw = totalMs / wanted;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const factor of [1, 2, 5, 10]) {
    if (raw <= factor * power) return factor * power;
  }
  return 10 * power;
}

function axis(totalMs) {
  const ticks = el("div", { cls: "axis-track" });
  const step = niceStep(totalMs, 6);
  for (let at = 0; at <= totalMs + 1e-9; at += step) {
    const tick = el("span", { cls: "tick", text: formatMs(at) });
    tick.style.left = `${(100 * at) / totalMs}%`;
    ticks.appendChild(tick);
  }
  return el("div", { cls: "row axis" }, el("div", { cls: "label" }), ticks, el("div", { cls: "dur" }));
}

/** Draw the spans into ``box``; ``onSelect(span)`` when a row is clicked. */
export function renderTimeline(box, roots, onSelect) {
  clear(box);
  const rows = flatten(roots);
  if (rows.length === 0) {
    box.appendChild(el("p", { cls: "empty", text: "This run recorded no spans." }));
    return;
  }
  const start = earliestStart(rows.map(([, span]) => span));
  const end = rows.reduce((last, [, s]) => Math.max(last, s.endNs ?? s.startNs), -Infinity);
  const totalMs = Math.max(msBetween(start, end), 0.001);
  box.appendChild(axis(totalMs));
  for (const [depth, span] of rows) {
    const offset = msBetween(start, span.startNs);
    const length = msBetween(span.startNs, span.endNs ?? span.startNs);
    const bar = el("div", {
      cls: `bar ${operationClass(span.operation)} status-${span.status}`,
      title: `${span.name}: ${formatMs(length)} from +${formatMs(offset)} (${span.status})`,
    });
    bar.style.left = `${(100 * offset) / totalMs}%`;
    bar.style.width = `${(100 * length) / totalMs}%`;
    const label = el("div", { cls: "label", text: span.name, title: span.name });
    label.style.paddingLeft = `${0.4 + depth * 1.1}em`;
    const row = el(
      "div",
      {
        cls: "row span-row",
        attrs: { role: "button", tabindex: "0", "data-span-id": span.spanId },
        on: {
          click: () => onSelect(span),
          keydown: (event) => {
            if (event.key === "Enter" || event.key === " ") {
              event.preventDefault();
              onSelect(span);
            }
          },
        },
      },
      label,
      el("div", { cls: "track" }, bar),
      el("div", { cls: "dur", text: formatMs(length) }),
    );
    box.appendChild(row);
  }
}

/** Mark the row of ``spanId`` as the selected one. */
export function markSelected(box, spanId) {
  for (const row of box.querySelectorAll(".span-row")) {
    row.classList.toggle("selected", row.getAttribute("data-span-id") === spanId);
  }
}
