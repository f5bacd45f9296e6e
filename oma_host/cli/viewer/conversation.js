// A run's captured conversation, readable: what content capture recorded
// (docs/telemetry.md, "What is exported": the run's input on its
// invoke_agent span, each reply on its chat span, a tool call's arguments
// and result on its execute_tool span, each redacted and bounded) shown as
// the prompt, the model's replies with their tool calls and each call's
// result, in order, instead of the attributes' raw JSON. A run recorded
// without content capture has none of these attributes, and says so.

import { el, asText } from "./dom.js";

export const INPUT_MESSAGES = "gen_ai.input.messages";
export const OUTPUT_MESSAGES = "gen_ai.output.messages";
export const TOOL_ARGUMENTS = "gen_ai.tool.call.arguments";
export const TOOL_RESULT = "gen_ai.tool.call.result";
const TOOL_CALL_ID = "gen_ai.tool.call.id";
const TOOL_NAME = "gen_ai.tool.name";
/** The attributes this module shows; the detail's table leaves them out. */
export const CONTENT_ATTRIBUTES = new Set([INPUT_MESSAGES, OUTPUT_MESSAGES, TOOL_ARGUMENTS, TOOL_RESULT]);

/** A content attribute as data: its JSON parsed, else the text as it is
 * (a plain string, or JSON cut at the capture's bound). */
export function parsed(value) {
  if (typeof value !== "string") return { data: value, cut: false };
  try {
    return { data: JSON.parse(value), cut: false };
  } catch {
    return { data: value, cut: /\[truncated at \d+ characters\]$/.test(value) };
  }
}

function messagesOf(value) {
  const { data } = parsed(value);
  if (Array.isArray(data)) return data.filter((m) => m && typeof m === "object");
  if (typeof data === "string") return null; // a plain text, or a cut capture
  return data && typeof data === "object" ? [data] : null;
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((block) => block && block.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
}

/** One content block as an element: text, a tool call, a tool result, or what it is. */
function block(part) {
  if (typeof part === "string") return el("div", { cls: "msg-text", text: part });
  if (!part || typeof part !== "object") return null;
  if (part.type === "text") return el("div", { cls: "msg-text", text: part.text ?? "" });
  if (part.type === "tool_use") {
    return el(
      "div",
      { cls: "msg-tool-use" },
      el("span", { cls: "msg-tag", text: `tool call ${part.name ?? ""}` }),
      el("pre", { text: asText(part.input ?? {}) }),
    );
  }
  if (part.type === "tool_result") {
    const content = typeof part.content === "string" ? part.content : textOf(part.content) || asText(part.content ?? "");
    return el(
      "div",
      { cls: `msg-tool-result${part.is_error ? " is-error" : ""}` },
      el("span", { cls: "msg-tag", text: part.is_error ? "tool error" : "tool result" }),
      el("pre", { text: content }),
    );
  }
  if (part.type === "thinking" || part.type === "redacted_thinking") {
    return el("div", { cls: "msg-thinking", text: part.thinking ?? "(thinking)" });
  }
  return el("div", { cls: "msg-other", text: `[${part.type ?? "block"}]` });
}

const ROLE_NAMES = { user: "User", assistant: "Model", system: "System", tool: "Tool" };

/** One message (``{role, content}``) as an element. */
export function messageElement(message, label) {
  const role = typeof message.role === "string" ? message.role : "other";
  const content = message.content;
  const parts = typeof content === "string" ? [content] : Array.isArray(content) ? content : [];
  return el(
    "div",
    { cls: `msg msg-${role}` },
    el("div", { cls: "msg-role", text: label ?? ROLE_NAMES[role] ?? role }),
    ...parts.map(block),
  );
}

/** A content attribute shown readably: its messages, else its text. */
export function contentElement(value, label) {
  const messages = messagesOf(value);
  if (messages !== null) return el("div", { cls: "messages" }, ...messages.map((m) => messageElement(m)));
  const { data } = parsed(value);
  return el("div", { cls: "messages" }, messageElement({ role: "assistant", content: asText(data) }, label));
}

/** Where a run's input puts its prompt: the last user message with text
 * (a session's turn carries the conversation before it). */
function splitInput(messages) {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (messages[i].role === "user" && textOf(messages[i].content).trim()) {
      return { earlier: messages.slice(0, i), prompt: messages[i] };
    }
  }
  return { earlier: messages, prompt: null };
}

/** The run's conversation from its top span's node (``{...span, children}``):
 * an element, or null when nothing was captured. ``onSelect(span)`` when
 * a reply or a tool call is clicked. */
export function conversation(root, onSelect) {
  const attributes = root.attributes || {};
  const children = root.children || [];
  const chats = children.filter((node) => node.operation === "chat" && node.attributes?.[OUTPUT_MESSAGES] !== undefined);
  const tools = new Map(
    children
      .filter((node) => node.operation === "execute_tool")
      .map((node) => [node.attributes?.[TOOL_CALL_ID], node]),
  );
  if (attributes[INPUT_MESSAGES] === undefined && attributes[OUTPUT_MESSAGES] === undefined && chats.length === 0) {
    return null;
  }
  const items = [];
  const input = attributes[INPUT_MESSAGES];
  if (input !== undefined) {
    const messages = messagesOf(input);
    if (messages === null) {
      items.push(el("div", { cls: "msg msg-user" }, el("div", { cls: "msg-role", text: "Prompt" }), block(asText(parsed(input).data))));
    } else {
      const { earlier, prompt } = splitInput(messages);
      if (earlier.length) {
        items.push(
          el(
            "details",
            { cls: "earlier" },
            el("summary", { text: `Earlier in the session: ${earlier.length} message${earlier.length === 1 ? "" : "s"}` }),
            ...earlier.map((m) => messageElement(m)),
          ),
        );
      }
      if (prompt) items.push(messageElement(prompt, "Prompt"));
    }
  }
  const clickable = (node, element) => {
    element.classList.add("clickable");
    element.setAttribute("tabindex", "0");
    element.setAttribute("data-span-id", node.spanId);
    element.addEventListener("click", () => onSelect(node));
    element.addEventListener("keydown", (event) => {
      if (event.key === "Enter") onSelect(node);
    });
    return element;
  };
  for (const chat of chats) {
    const replies = messagesOf(chat.attributes[OUTPUT_MESSAGES]) ?? [{ role: "assistant", content: asText(parsed(chat.attributes[OUTPUT_MESSAGES]).data) }];
    for (const reply of replies) {
      const parts = typeof reply.content === "string" ? [reply.content] : Array.isArray(reply.content) ? reply.content : [];
      const text = parts.filter((part) => typeof part === "string" || part?.type !== "tool_use");
      if (text.length) items.push(clickable(chat, messageElement({ role: "assistant", content: text }, "Reply")));
      for (const call of parts.filter((part) => part?.type === "tool_use")) {
        const tool = tools.get(call.id);
        const card = el(
          "div",
          { cls: `msg msg-tool${tool?.status === "error" ? " is-error" : ""}` },
          el("div", { cls: "msg-role", text: `Tool call: ${call.name ?? tool?.attributes?.[TOOL_NAME] ?? ""}` }),
          el("pre", { cls: "tool-arguments", text: asText(call.input ?? {}) }),
        );
        const result = tool?.attributes?.[TOOL_RESULT];
        if (result !== undefined) {
          card.appendChild(el("div", { cls: "msg-tag", text: tool.status === "error" ? "error" : "result" }));
          card.appendChild(el("pre", { cls: "tool-result", text: asText(parsed(result).data) }));
        }
        items.push(tool ? clickable(tool, card) : card);
      }
    }
  }
  if (chats.length === 0 && attributes[OUTPUT_MESSAGES] !== undefined) {
    // A process or ACP agent: no chat spans, its run's output is the reply.
    items.push(messageElement({ role: "assistant", content: asText(parsed(attributes[OUTPUT_MESSAGES]).data) }, "Reply"));
  }
  return el("div", { cls: "conversation" }, ...items);
}
