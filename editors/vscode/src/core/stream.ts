/**
 * Stream assembly: turns the StreamEvents that arrive as `$/progress`
 * (agent/stream's partialResultToken) into text appended to a reply
 * document, and closes the reply when the run's result arrives.
 *
 * Text deltas are written as they come, and so is a running tool call's
 * output (under one marker line per call); reasoning, tool calls, tool
 * results, permission decisions, model fallbacks, compactions and errors
 * become short bracketed lines (worded in ./eventLines) so the reader sees
 * what the agent did without the reply text being interleaved with JSON. A
 * delegate's events are rendered the same way, each of its lines starting
 * with its name (`[reviewer] `, `[reviewer > linter] ` for its own delegate).
 */

import {
  compactionLine,
  errorLine,
  type EventData,
  modelFallbackLine,
  outputMarker,
  permissionLine,
  terminalLine,
  toolResultLine,
  toolUseLine,
  voicePrefix,
} from './eventLines';
import type { AgentRunResult, StreamEvent } from './protocol';

function isRecord(value: unknown): value is EventData {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The document's last line while it is not ended: who wrote it (a voice prefix) and what it holds. */
interface OpenLine {
  voice: string;
  kind: string;
}

export class ReplyAssembler {
  /** The reply text streamed so far (the run's own text events; a delegate's are not its reply). */
  text = '';
  /** Every event, in arrival order. */
  readonly events: StreamEvent[] = [];
  /** Everything rendered so far: what the reply document holds. */
  rendered = '';
  private open: OpenLine | undefined;
  /** The call (voice prefix + call id) whose output was the last thing written, if it still is. */
  private outputShown: string | undefined;
  /** The output each call streamed into the document, by voice prefix + call id. */
  private readonly streamed = new Map<string, string>();
  /** Each call's tool name, by voice prefix + call id, for its output marker. */
  private readonly tools = new Map<string, string>();
  /** Error messages already in the document: each is shown once. */
  private readonly errorsShown = new Set<string>();

  /** Take one event; returns what to append to the document (may be empty). */
  push(event: StreamEvent): string {
    this.events.push(event);
    const start = this.rendered.length;
    this.render([], event);
    return this.rendered.slice(start);
  }

  /**
   * The run is over: returns the closing text. When nothing was streamed (an
   * agent/prompt turn, or a backend that did not stream) the output is shown
   * here; a run that did not succeed ends with its status. A failed run's
   * output and status often repeat an error already streamed (a missing API
   * key says so in all three): each error is shown once.
   */
  finish(result: AgentRunResult): string {
    const start = this.rendered.length;
    const { code, message: statusMessage } = result.status;
    const failed = code !== 'ok';
    const repeats = failed && (result.output === statusMessage || this.errorsShown.has(result.output));
    if (this.text === '' && result.output && !repeats) {
      this.text = result.output;
      this.put('', 'text', result.output);
    }
    if (failed && !(statusMessage !== undefined && this.errorsShown.has(statusMessage))) {
      this.line('', `[${code}${statusMessage ? `: ${statusMessage}` : ''}]`);
    } else if (!this.atLineStart()) {
      this.rendered += '\n';
      this.open = undefined;
    }
    return this.rendered.slice(start);
  }

  /** A cancelled run: show the marker (the partial text is already there). */
  cancelled(partial: AgentRunResult | undefined): string {
    const start = this.rendered.length;
    if (this.text === '' && partial?.output) {
      this.text = partial.output;
      this.put('', 'text', partial.output);
    }
    this.line('', '[cancelled]');
    return this.rendered.slice(start);
  }

  /** Render `event` of the run (`agents` empty) or of the delegate that chain of delegations reached. */
  private render(agents: string[], event: StreamEvent): void {
    const voice = voicePrefix(agents);
    const data: EventData = isRecord(event.data) ? event.data : {};
    switch (event.type) {
      case 'text':
        if (typeof event.data === 'string') {
          this.text += agents.length === 0 ? event.data : '';
          this.put(voice, 'text', event.data);
        }
        break;
      case 'reasoning':
        if (typeof event.data === 'string') {
          const going = this.open?.voice === voice && this.open.kind === 'reasoning';
          this.put(voice, 'reasoning', (going ? '' : '[reasoning] ') + event.data);
        }
        break;
      case 'tool_use':
        this.tools.set(voice + String(data.id), String(data.name));
        this.line(voice, toolUseLine(data));
        break;
      case 'tool_output':
        this.output(voice, data);
        break;
      case 'tool_result':
        this.line(voice, toolResultLine(data, this.streamed.get(voice + String(data.tool_use_id))));
        break;
      case 'permission':
        this.line(voice, permissionLine(data));
        break;
      case 'delegate':
        if (typeof data.agent === 'string' && isRecord(data.event)) {
          const nested = event.data.event;
          if (nested.type === 'text' && typeof nested.data === 'string') {
            // The delegate's text is the call's output: its result need not repeat it.
            this.addStreamed(voice + String(data.toolUseId), nested.data);
          }
          this.render([...agents, data.agent], nested);
        }
        break;
      case 'model_fallback':
        this.line(voice, modelFallbackLine(data));
        break;
      case 'compaction':
        this.line(voice, compactionLine(data));
        break;
      case 'error': {
        const message = String(data.message);
        if (agents.length === 0) {
          this.errorsShown.add(message);
        }
        this.line(voice, errorLine(message));
        break;
      }
      default:
        // acp_update, plan and kinds this client does not know: kept in `events`, not shown.
        break;
    }
  }

  /** A running call's output: its text as it comes under the call's marker, or the terminal showing it. */
  private output(voice: string, data: EventData): void {
    const call = voice + String(data.toolUseId);
    const tool = this.tools.get(call) ?? 'tool';
    if (typeof data.text === 'string') {
      if (this.outputShown !== call) {
        this.line(voice, outputMarker(tool));
      }
      this.put(voice, `output ${call}`, data.text);
      this.addStreamed(call, data.text);
      this.outputShown = call;
    } else if (data.terminalId !== undefined) {
      this.line(voice, terminalLine(tool, data.terminalId));
    }
  }

  private addStreamed(call: string, text: string): void {
    this.streamed.set(call, (this.streamed.get(call) ?? '') + text);
  }

  private atLineStart(): boolean {
    return this.rendered === '' || this.rendered.endsWith('\n');
  }

  /**
   * Write `chunk` as `voice`'s `kind` of text. It goes on the open line only
   * when that line is the same voice's same kind; otherwise it starts a line.
   * Every line a delegate's voice starts begins with its prefix.
   */
  private put(voice: string, kind: string, chunk: string): void {
    if (chunk === '') {
      return;
    }
    this.outputShown = undefined;
    let atStart = this.atLineStart();
    let out = '';
    if (!atStart && !(this.open?.voice === voice && this.open.kind === kind)) {
      out = '\n';
      atStart = true;
    }
    chunk.split('\n').forEach((part, index) => {
      if (index > 0) {
        out += '\n';
      }
      out += part !== '' && (atStart || index > 0) ? voice + part : part;
    });
    this.open = chunk.endsWith('\n') ? undefined : { voice, kind };
    this.rendered += out;
  }

  /** `line` on a line of its own. */
  private line(voice: string, line: string): void {
    this.put(voice, 'line', `${line}\n`);
  }
}
