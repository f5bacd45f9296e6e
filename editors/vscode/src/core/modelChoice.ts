/**
 * Choosing an agent's model from the provider's list ("OMA: Choose model"):
 * where `models/list` asks (the agent's provider, baseURL and apiKeyEnv),
 * the picker's items, and the per-agent model choices the extension keeps in
 * workspace state and lays over `oma.agents`.
 *
 * A choice is kept with the provider and the model the settings named when it
 * was made: once the settings name another provider or model for that agent,
 * the settings win and the choice is dropped (it was a choice among the old
 * provider's models).
 */

import type { AgentConfig, ModelInfo, ModelsListParams } from './protocol';
import type { OmaSettings } from './settings';

/** The models/list params for `agent`; an external agent (backend) has no provider list. */
export function modelsListParams(agent: AgentConfig): ModelsListParams {
  if (agent.backend !== undefined && agent.backend !== null) {
    throw new Error(
      `${agent.name} is an external agent (backend: ${agent.backend.kind}): it has no provider model list`,
    );
  }
  const params: ModelsListParams = {};
  if (typeof agent.provider === 'string') {
    params.provider = agent.provider;
  }
  if (typeof agent.baseURL === 'string') {
    params.baseURL = agent.baseURL;
  }
  if (typeof agent.apiKeyEnv === 'string') {
    params.apiKeyEnv = agent.apiKeyEnv;
  }
  return params;
}

export interface ModelPickItem {
  label: string;
  description: string;
  model: string;
}

/** The picker's items in the provider's order; the agent's current model says so. */
export function modelPickItems(models: ModelInfo[], current: string | undefined): ModelPickItem[] {
  return models.map((model) => {
    const about = [model.displayName !== model.id ? model.displayName : undefined, model.ownedBy]
      .filter((part): part is string => typeof part === 'string' && part !== '')
      .join(' · ');
    return {
      label: model.id,
      description: model.id === current ? `current${about ? ` · ${about}` : ''}` : about,
      model: model.id,
    };
  });
}

/** A model chosen for one agent, with what the settings named when it was chosen. */
export interface ModelChoice {
  model: string;
  provider?: string;
  configuredModel?: string;
}

export type ModelChoices = Record<string, ModelChoice>;

function stillApplies(agent: AgentConfig, choice: ModelChoice): boolean {
  return agent.provider === choice.provider && agent.model === choice.configuredModel;
}

/** The settings with each agent's chosen model in place of the configured one. */
export function withModelChoices(settings: OmaSettings, choices: ModelChoices): OmaSettings {
  return {
    ...settings,
    agents: settings.agents.map((agent) => {
      const choice = Object.prototype.hasOwnProperty.call(choices, agent.name) ? choices[agent.name] : undefined;
      return choice !== undefined && stillApplies(agent, choice) ? { ...agent, model: choice.model } : agent;
    }),
  };
}

/**
 * The choices after choosing `model` for `configured` (the agent as the
 * settings name it): choosing the configured model again removes the choice.
 */
export function chooseModel(choices: ModelChoices, configured: AgentConfig, model: string): ModelChoices {
  const next: ModelChoices = { ...choices };
  delete next[configured.name];
  if (model !== configured.model) {
    next[configured.name] = {
      model,
      provider: configured.provider ?? undefined,
      configuredModel: configured.model ?? undefined,
    };
  }
  return next;
}
