-- The agents: the ones configured (`setup{agents = {...}}`, or the one
-- `agent`), and the agentId the host gave each.
--
-- An agent is created on the host (agent/create) the first time a command
-- needs it, after the configured agents its `delegates` names, and its
-- agentId is kept per agent, so switching agents with :OmaAgent and back
-- returns to the same conversation. setup() and a host exit forget them all.

local client = require('oma.client')

local M = {}

-- Keyed by the config table itself (two configs may share a name while
-- setup{agent} is not one of setup{agents}): agent -> { id, waiting }.
local known = {}

--- The agents to pick from: `config.agents`, or the one `config.agent` without a list.
function M.configured(config)
  if config.agents and #config.agents > 0 then
    return config.agents
  end
  return { config.agent }
end

--- The names to pick from, in the configured order.
function M.names(config)
  local names = {}
  for _, agent in ipairs(M.configured(config)) do
    names[#names + 1] = agent.name
  end
  return names
end

--- The configured agent called `name`, or nil.
function M.find(config, name)
  for _, agent in ipairs(M.configured(config)) do
    if agent.name == name then
      return agent
    end
  end
  return nil
end

--- One line about an agent for the picker: its name, and what answers it.
function M.describe(agent)
  local backend = type(agent.backend) == 'table' and agent.backend or nil
  if backend then
    return string.format('%s (%s: %s)', agent.name, tostring(backend.kind), tostring(backend.command))
  end
  local about = vim.tbl_filter(function(part)
    return type(part) == 'string' and part ~= ''
  end, { agent.provider, agent.model })
  if #about == 0 then
    return agent.name
  end
  return string.format('%s (%s)', agent.name, table.concat(about, ' '))
end

--- The host's agentId for `agent`, if it was created and not forgotten since.
function M.id(agent)
  local state = known[agent]
  return state and state.id
end

-- Sends agent/create for `agent` unless it has an agentId or one is coming;
-- `done(err, agent_id)`, if given, gets the answer (at once when known).
-- Answers the agent's state, whose `err` is its last create's refusal.
local function create(config, agent, done)
  local state = known[agent]
  if state == nil then
    state = {}
    known[agent] = state
  end
  if state.id then
    if done then
      done(nil, state.id)
    end
    return state
  end
  if state.waiting then
    if done then
      table.insert(state.waiting, done)
    end
    return state
  end
  -- Set before the request: a host that is not running answers at once.
  state.waiting = { done }
  state.err = nil
  client.request(config, 'agent/create', { config = agent }, function(err, result)
    -- Forgotten meanwhile (setup(), the host exited), `state` is detached: the
    -- runs waiting still get their answer, later ones create the agent anew.
    local waiting = state.waiting
    state.waiting = nil
    if not err then
      state.id = result.agentId
    end
    state.err = err
    for _, callback in ipairs(waiting) do
      callback(err, result and result.agentId)
    end
  end)
  return state
end

-- Sends agent/create for each configured delegate of `agent` (depth first,
-- their own delegates before them) not created yet, and appends their
-- states to `states`. `chain` holds the names on the way here: a cycle, like
-- a name not configured, is left to the host, which refuses the agent naming it.
local function create_delegates(config, agent, chain, states)
  local names = type(agent.delegates) == 'table' and agent.delegates or {}
  for _, name in ipairs(names) do
    local delegate = type(name) == 'string' and not chain[name] and M.find(config, name) or nil
    if delegate then
      local deeper = vim.tbl_extend('force', {}, chain, { [name] = true })
      create_delegates(config, delegate, deeper, states)
      states[#states + 1] = create(config, delegate)
    end
  end
end

--- The agentId of `agent`, created on first use after its configured
--- delegates (the host binds each name in `delegates` to the agent of that
--- name created before); `done(err, agent_id)`. Every agent/create is sent
--- at once, delegates first: the host finishes the creates it read before one
--- that names delegates.
function M.ensure(config, agent, done)
  local delegates = {}
  create_delegates(config, agent, { [agent.name] = true }, delegates)
  create(config, agent, function(err, agent_id)
    if err then
      -- A delegate the host refused is why the agent naming it is refused too: say so.
      for _, delegate in ipairs(delegates) do
        if delegate.err then
          err = delegate.err
          break
        end
      end
    end
    done(err, agent_id)
  end)
end

--- Forget the agentId of `agent` (the host no longer knows it).
function M.forget(agent)
  known[agent] = nil
end

--- Know `agent` by the host's `agent_id`: an agent created elsewhere (a model switch).
function M.adopt(agent, agent_id)
  known[agent] = { id = agent_id }
end

--- Forget every agentId; with `dispose`, the host disposes the agents too.
function M.forget_all(config, dispose)
  local ids = {}
  for _, state in pairs(known) do
    ids[#ids + 1] = state.id
  end
  known = {}
  if dispose and client.get() then
    for _, id in ipairs(ids) do
      client.request(config, 'agent/dispose', { agentId = id }, function() end)
    end
  end
end

return M
