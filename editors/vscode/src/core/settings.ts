/**
 * Settings and host-process policy: the `oma.*` settings read into a checked
 * shape, the command that spawns the host, its initializationOptions, which
 * agent an ask goes to, and when a crashed host is restarted.
 */

import type { AgentConfig, InitializationOptions } from './protocol';

export interface OmaSettings {
  /** `oma.host.command` as set; empty when it is not (./hostCommand then looks for one). */
  command: string;
  args: string[];
  /** initializationOptions.stateDir; empty means the host's default. */
  stateDir: string;
  agents: AgentConfig[];
  defaultAgent: string;
}

/** Reads one setting; the extension passes `workspace.getConfiguration('oma').get`. */
export type SettingReader = (key: string) => unknown;

function stringSetting(read: SettingReader, key: string, fallback: string): string {
  const value = read(key);
  return typeof value === 'string' ? value : fallback;
}

/** Reads and checks the settings; a malformed agent entry is reported, not dropped. */
export function readSettings(read: SettingReader): OmaSettings {
  const args = read('host.args');
  const agents = read('agents');
  const list: unknown[] = Array.isArray(agents) ? agents : [];
  list.forEach((agent, index) => {
    if (typeof agent !== 'object' || agent === null || typeof (agent as AgentConfig).name !== 'string') {
      throw new Error(`oma.agents[${index}] must be an object with a string "name"`);
    }
  });
  const names = list.map((agent) => (agent as AgentConfig).name);
  const duplicate = names.find((name, index) => names.indexOf(name) !== index);
  if (duplicate !== undefined) {
    throw new Error(`oma.agents: the name "${duplicate}" is used twice`);
  }
  return {
    command: stringSetting(read, 'host.command', '').trim(),
    args: Array.isArray(args) ? args.filter((a): a is string => typeof a === 'string') : [],
    stateDir: stringSetting(read, 'stateDir', '').trim(),
    agents: list.map((agent) => ({ ...(agent as AgentConfig) })),
    defaultAgent: stringSetting(read, 'defaultAgent', '').trim(),
  };
}

export function initializationOptions(settings: OmaSettings): InitializationOptions {
  return settings.stateDir ? { stateDir: settings.stateDir } : {};
}

/**
 * The agent an ask goes to: the default agent when set, the only agent when
 * there is one, else `undefined` (the editor asks the person to pick).
 */
export function chooseAgent(settings: OmaSettings): AgentConfig | undefined {
  if (settings.agents.length === 0) {
    throw new Error('no agents are configured: add one to the "oma.agents" setting');
  }
  if (settings.defaultAgent) {
    const agent = settings.agents.find((a) => a.name === settings.defaultAgent);
    if (agent === undefined) {
      throw new Error(`oma.defaultAgent "${settings.defaultAgent}" is not in oma.agents`);
    }
    return agent;
  }
  return settings.agents.length === 1 ? settings.agents[0] : undefined;
}

/**
 * The agent the chat asks: the one picked with `/agent NAME` while it is
 * still configured, else the default or only agent, else the first one (the
 * chat has no pick dialog; `/agent` switches).
 */
export function chatAgent(settings: OmaSettings, picked: string | undefined): AgentConfig {
  const agent = settings.agents.find((a) => a.name === picked);
  return agent ?? chooseAgent(settings) ?? settings.agents[0];
}

/**
 * When the host dies, restart it, unless it has died `maxRestarts` times
 * within `windowMs` (then it is probably failing at start-up, and restarting
 * again would only loop).
 */
export class RestartPolicy {
  private readonly crashes: number[] = [];

  constructor(
    readonly maxRestarts = 5,
    readonly windowMs = 3 * 60 * 1000,
  ) {}

  /** Record a crash at `now` (ms); true when the host should be restarted. */
  shouldRestart(now: number): boolean {
    this.crashes.push(now);
    while (this.crashes.length > 0 && now - this.crashes[0] > this.windowMs) {
      this.crashes.shift();
    }
    return this.crashes.length <= this.maxRestarts;
  }

  describe(): string {
    return `oma-host exited ${this.crashes.length} times within ${Math.round(this.windowMs / 1000)} s`;
  }
}
