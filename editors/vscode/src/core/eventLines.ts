/**
 * The wording of the reply document's bracketed lines: one function per
 * StreamEvent kind the reply shows as a line, each returning the line
 * without its newline, and the prefix that marks a delegate's lines.
 *
 * The Neovim plugin words them the same (editors/nvim/lua/oma/event_lines.lua);
 * tests/editors/fixtures/reply_events.json holds the renderings both editors'
 * tests check.
 */

/** An event's data as it came: fields are read defensively, a missing one shows as `undefined`. */
export type EventData = Record<string, unknown>;

const PREVIEW_CHARS = 200;

/** `value` (JSON unless a string) on one line, whitespace runs made one space, cut to PREVIEW_CHARS. */
export function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length <= PREVIEW_CHARS ? flat : `${flat.slice(0, PREVIEW_CHARS - 3)}...`;
}

/**
 * What starts each line of a delegate (`agents`: the delegation chain,
 * outermost first); '' for the run's own.
 */
export function voicePrefix(agents: readonly string[]): string {
  return agents.length === 0 ? '' : `[${agents.join(' > ')}] `;
}

export function toolUseLine(data: EventData): string {
  return `[tool ${String(data.name)}] ${preview(data.input)}`;
}

/** Above a tool call's streamed output (`tool`: the call's tool name). */
export function outputMarker(tool: string): string {
  return `[${tool} output]`;
}

/** A tool call whose output the editor's terminal shows instead. */
export function terminalLine(tool: string, terminalId: unknown): string {
  return `[${tool} output in terminal ${String(terminalId)}]`;
}

/**
 * A tool call's result. `streamed`: the output this call streamed into the
 * reply already, if any; the result then shows only what it says beyond it.
 */
export function toolResultLine(data: EventData, streamed?: string): string {
  const label = data.is_error === true ? 'tool error' : 'tool result';
  const content =
    streamed !== undefined && typeof data.content === 'string'
      ? beyondStreamed(data.content, streamed)
      : data.content;
  return `[${label}] ${preview(content)}`;
}

/**
 * The lines of a result that were not streamed (the shell's `[exit code N:
 * ...]` or `[ended by SIGx]`, a timeout's explanation, a cut), else its last
 * line. The reader watched the output arrive: repeating it, even as a
 * preview, would bury the line that says how the call ended.
 */
export function beyondStreamed(content: string, streamed: string): string {
  const seen = new Set(streamed.split('\n'));
  const lines = content.split('\n').filter((line) => line.trim() !== '');
  const rest = lines.filter((line) => !seen.has(line));
  return (rest.length > 0 ? rest : lines.slice(-1)).join('\n');
}

/** An ACP agent's decision names its title; an LLM agent's names the tool and its target. */
export function permissionLine(data: EventData): string {
  const target = data.target === undefined || data.target === null ? '' : ` ${preview(data.target)}`;
  const what = typeof data.title === 'string' ? data.title : `${String(data.tool)}${target}`;
  return `[permission] ${what}: ${String(data.decision)}`;
}

export function errorLine(message: string): string {
  return `[error] ${message}`;
}

export function modelFallbackLine(data: EventData): string {
  return (
    `[model fallback] ${String(data.failed)} failed with HTTP ${String(data.status)} ` +
    `(${preview(data.message)}); going on with ${String(data.model)}`
  );
}

/** `images` lists the media of the compacted turns: a summary names them, a sliding window drops them. */
export function compactionLine(data: EventData): string {
  const media = Array.isArray(data.images) ? data.images.length : 0;
  const notKept = media > 0 ? `, ${media} image(s) or file(s) not kept` : '';
  return (
    `[compaction] ${String(data.strategy)} (${String(data.trigger)}): ` +
    `${String(data.before)} -> ${String(data.after)} messages, ` +
    `${String(data.tokensBefore)} -> ${String(data.tokensAfter)} tokens${notKept}`
  );
}
