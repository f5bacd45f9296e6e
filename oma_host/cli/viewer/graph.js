// A team run's tasks as their dependency graph: one node per ``task`` span
// (its id, assignee and outcome), an arrow from each task to those that
// depended on it (``oma.task.depends_on``), in columns by the longest chain
// of dependencies before a task.

import { svg, clear } from "./dom.js";

const TASK_ID = "oma.task.id";
const DEPENDS_ON = "oma.task.depends_on";
const ASSIGNEE = "oma.task.assignee";
const TASK_STATUS = "oma.task.status";
const WIDTH = 170;
const HEIGHT = 46;
const GAP_X = 70;
const GAP_Y = 18;
const MARGIN = 8;
const LABEL_CHARS = 22;

/** The tasks among the spans: {id, span, dependsOn}, in the order they started. */
export function tasksOf(spans) {
  return spans
    .filter((span) => span.operation === "task" && typeof span.attributes[TASK_ID] === "string")
    .map((span) => ({
      id: span.attributes[TASK_ID],
      span,
      dependsOn: Array.isArray(span.attributes[DEPENDS_ON]) ? span.attributes[DEPENDS_ON] : [],
    }));
}

function columns(tasks) {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const depth = new Map();
  const visiting = new Set();
  const depthOf = (task) => {
    if (depth.has(task.id)) return depth.get(task.id);
    if (visiting.has(task.id)) return 0; // a cycle (the host refuses them): draw it flat
    visiting.add(task.id);
    let deepest = 0;
    for (const id of task.dependsOn) {
      const before = byId.get(id);
      if (before) deepest = Math.max(deepest, depthOf(before) + 1);
    }
    visiting.delete(task.id);
    depth.set(task.id, deepest);
    return deepest;
  };
  const result = [];
  for (const task of tasks) {
    const column = depthOf(task);
    (result[column] ||= []).push(task);
  }
  return result.map((column) => column || []);
}

function short(text) {
  return text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text;
}

/** Draw ``tasks`` into the ``<svg>``; ``onSelect(span)`` when a node is clicked. */
export function renderGraph(box, tasks, onSelect) {
  clear(box);
  const placed = new Map();
  const layout = columns(tasks);
  let tallest = 0;
  layout.forEach((column, x) => {
    column.forEach((task, y) => {
      placed.set(task.id, { x: MARGIN + x * (WIDTH + GAP_X), y: MARGIN + y * (HEIGHT + GAP_Y) });
    });
    tallest = Math.max(tallest, column.length);
  });
  const width = 2 * MARGIN + layout.length * WIDTH + Math.max(layout.length - 1, 0) * GAP_X;
  const height = 2 * MARGIN + tallest * HEIGHT + Math.max(tallest - 1, 0) * GAP_Y;
  box.setAttribute("viewBox", `0 0 ${width} ${height}`);
  box.setAttribute("width", String(width));
  box.setAttribute("height", String(height));
  box.appendChild(
    svg(
      "defs",
      {},
      svg(
        "marker",
        {
          attrs: {
            id: "arrow",
            viewBox: "0 0 10 10",
            refX: "10",
            refY: "5",
            markerWidth: "7",
            markerHeight: "7",
            orient: "auto-start-reverse",
          },
        },
        svg("path", { attrs: { d: "M 0 0 L 10 5 L 0 10 z" } }),
      ),
    ),
  );
  for (const task of tasks) {
    const to = placed.get(task.id);
    for (const id of task.dependsOn) {
      const from = placed.get(id);
      if (!from) continue; // a dependency that recorded no span
      const x1 = from.x + WIDTH;
      const y1 = from.y + HEIGHT / 2;
      const x2 = to.x;
      const y2 = to.y + HEIGHT / 2;
      const bend = (x2 - x1) / 2;
      box.appendChild(
        svg("path", {
          cls: "edge",
          title: `${task.id} depends on ${id}`,
          attrs: {
            d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`,
            "marker-end": "url(#arrow)",
            "data-from": id,
            "data-to": task.id,
          },
        }),
      );
    }
  }
  for (const task of tasks) {
    const { x, y } = placed.get(task.id);
    const attributes = task.span.attributes;
    const outcome = attributes[TASK_STATUS] ?? task.span.status;
    const assignee = attributes[ASSIGNEE] ?? "";
    const reason = task.span.stored?.taskReason;
    box.appendChild(
      svg(
        "g",
        {
          cls: `node task-${["completed", "failed", "skipped"].includes(outcome) ? outcome : "other"}`,
          title: `task ${task.id}: ${assignee} ${outcome}${reason ? ` (${reason})` : ""}`,
          attrs: { transform: `translate(${x} ${y})`, tabindex: "0", "data-task-id": task.id },
          on: {
            click: () => onSelect(task.span),
            keydown: (event) => {
              if (event.key === "Enter") onSelect(task.span);
            },
          },
        },
        svg("rect", { attrs: { width: WIDTH, height: HEIGHT, rx: 6 } }),
        svg("text", { cls: "task-id", text: short(task.id), attrs: { x: 10, y: 19 } }),
        svg("text", {
          cls: "task-meta",
          text: short(`${assignee} · ${outcome}`),
          attrs: { x: 10, y: 36 },
        }),
      ),
    );
  }
}
