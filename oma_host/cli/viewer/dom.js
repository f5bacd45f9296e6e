// Building the page from data: every string goes in as text (textContent,
// setAttribute), never as markup, so an agent's name or a tool's input that
// holds HTML shows as the characters it is. Also the formats of times,
// durations, tokens and costs.

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(node, options, children) {
  const { cls, text, title, attrs, on } = options || {};
  if (cls) node.setAttribute("class", cls);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (title) {
    if (node.namespaceURI === SVG_NS) {
      const tip = document.createElementNS(SVG_NS, "title");
      tip.textContent = String(title);
      node.appendChild(tip);
    } else {
      node.title = String(title);
    }
  }
  for (const [name, value] of Object.entries(attrs || {})) {
    if (/^on/i.test(name)) throw new Error(`no event handler attributes: ${name}`);
    node.setAttribute(name, String(value));
  }
  for (const [event, listener] of Object.entries(on || {})) node.addEventListener(event, listener);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** An HTML element: el("td", {cls: "num", text: "3"}), el("ul", {}, item, item). */
export function el(tag, options, ...children) {
  return fill(document.createElement(tag), options, children);
}

/** An SVG element, the same way. */
export function svg(tag, options, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), options, children);
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

export function formatTime(epochSeconds) {
  const date = new Date(epochSeconds * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

export function formatMs(ms) {
  if (ms === 0) return "0 ms";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function formatCount(n) {
  return n === null || n === undefined ? "-" : Number(n).toLocaleString("en-US");
}

export function formatCost(usd) {
  return usd === null || usd === undefined ? "-" : `$${Number(usd).toFixed(4)}`;
}

/** A value of an attribute or a stored field as text (JSON for non-strings). */
export function asText(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** A status as a badge: ok, error, cancelled, skipped, or whatever the store says. */
export function statusBadge(status) {
  const known = ["ok", "error", "cancelled", "skipped"].includes(status) ? status : "other";
  return el("span", { cls: `badge status-${known}`, text: status });
}
