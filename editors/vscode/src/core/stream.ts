/**
 * Stream assembly: turns the StreamEvents that arrive as `$/progress`
 * (agent/stream's partialResultToken) into text appended to a reply
 * document, and closes the reply when the run's result arrives.
 *
 * Text deltas are written as they come; reasoning, tool calls, tool results,
 * permission decisions and errors become short bracketed lines so the reader
 * sees what the agent did without the reply text being interleaved with JSON.
 */

import type { AgentRunResult, StreamEvent } from './protocol';

const PREVIEW_CHARS = 200;

function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length <= PREVIEW_CHARS ? flat : `${flat.slice(0, PREVIEW_CHARS - 1)}…`;
}

export class ReplyAssembler {
  /** The reply text streamed so far (text events only). */
  text = '';
  /** Every event, in arrival order. */
  readonly events: StreamEvent[] = [];
  /** Everything rendered so far: what the reply document holds. */
  rendered = '';
  private inReasoning = false;
  /** Error messages already in the document: each is shown once. */
  private readonly errorsShown = new Set<string>();

  /** Take one event; returns what to append to the document (may be empty). */
  push(event: StreamEvent): string {
    this.events.push(event);
    let delta = '';
    if (event.type === 'reasoning' && typeof event.data === 'string') {
      delta = (this.inReasoning ? '' : this.lineBreak('[reasoning] ')) + event.data;
      this.inReasoning = true;
      return this.emit(delta);
    }
    if (this.inReasoning) {
      this.inReasoning = false;
      delta += '\n';
    }
    const data = event.data as Record<string, unknown> | string | undefined;
    const field = (name: string): unknown =>
      typeof data === 'object' && data !== null ? data[name] : undefined;
    switch (event.type) {
      case 'text':
        if (typeof data === 'string') {
          this.text += data;
          delta += data;
        }
        break;
      case 'tool_use':
        delta += this.lineBreak(`[tool ${String(field('name'))}] ${preview(field('input'))}\n`, delta);
        break;
      case 'tool_result': {
        const label = field('is_error') === true ? 'tool error' : 'tool result';
        delta += this.lineBreak(`[${label}] ${preview(field('content'))}\n`, delta);
        break;
      }
      case 'permission':
        delta += this.lineBreak(
          `[permission] ${String(field('title'))}: ${String(field('decision'))}\n`,
          delta,
        );
        break;
      case 'error': {
        const message = String(field('message'));
        this.errorsShown.add(message);
        delta += this.lineBreak(`[error] ${message}\n`, delta);
        break;
      }
      default:
        // acp_update and kinds this client does not know: kept in `events`, not shown.
        break;
    }
    return this.emit(delta);
  }

  /**
   * The run is over: returns the closing text. When nothing was streamed (an
   * agent/prompt turn, or a backend that did not stream) the output is shown
   * here; a run that did not succeed ends with its status. A failed run's
   * output and status often repeat an error already streamed (a missing API
   * key says so in all three): each error is shown once.
   */
  finish(result: AgentRunResult): string {
    let delta = this.inReasoning ? '\n' : '';
    this.inReasoning = false;
    const { code, message: statusMessage } = result.status;
    const failed = code !== 'ok';
    const repeats = failed && (result.output === statusMessage || this.errorsShown.has(result.output));
    if (this.text === '' && result.output && !repeats) {
      this.text = result.output;
      delta += result.output;
    }
    if (failed && !(statusMessage !== undefined && this.errorsShown.has(statusMessage))) {
      const message = statusMessage ? `: ${statusMessage}` : '';
      delta += this.lineBreak(`[${code}${message}]\n`, delta);
    } else if (!(this.rendered + delta).endsWith('\n')) {
      delta += '\n';
    }
    return this.emit(delta);
  }

  /** A cancelled run: show the marker (the partial text is already there). */
  cancelled(partial: AgentRunResult | undefined): string {
    let delta = '';
    if (this.text === '' && partial?.output) {
      this.text = partial.output;
      delta += partial.output;
    }
    return this.emit(delta + this.lineBreak('[cancelled]\n', delta));
  }

  /** Prefix `line` with a newline unless it would start a fresh line anyway. */
  private lineBreak(line: string, pending = ''): string {
    const before = this.rendered + pending;
    return before === '' || before.endsWith('\n') ? line : `\n${line}`;
  }

  private emit(delta: string): string {
    this.rendered += delta;
    return delta;
  }
}
