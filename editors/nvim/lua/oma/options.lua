-- The options of require('oma').setup{}: their defaults, their checks, and
-- which agent a setup asks (`agent`, a config or the name of one of `agents`;
-- `agents` without `agent`: the first of them). doc/oma.txt describes each
-- one (:help oma-options).

local M = {}

--- Every option and the Lua types it takes.
M.types = {
  cmd = { 'table' },
  cmd_cwd = { 'string' },
  cmd_env = { 'table' },
  state_dir = { 'string' },
  agent = { 'table', 'string' },
  agents = { 'table' },
  permission = { 'function' },
  open = { 'string' },
}

--- How the reply buffer can be shown.
M.open_values = { 'vsplit', 'split', 'tab', 'none' }

-- Options that change the host process: a new value restarts it.
local HOST_OPTIONS = { 'cmd', 'cmd_cwd', 'cmd_env', 'state_dir' }

--- A fresh copy of the defaults.
function M.defaults()
  return {
    cmd = { 'oma-host' },
    cmd_cwd = nil,
    cmd_env = nil,
    state_dir = nil,
    agent = {
      name = 'claude',
      provider = 'anthropic',
      model = 'claude-sonnet-5-5',
      apiKeyEnv = 'ANTHROPIC_API_KEY',
    },
    agents = {},
    permission = nil,
    open = 'vsplit',
  }
end

local function check_agent(agent, where)
  if type(agent) ~= 'table' or type(agent.name) ~= 'string' or agent.name == '' then
    error(string.format('oma.setup: %s.name must be a string', where), 0)
  end
end

local function check(opts)
  for key, value in pairs(opts) do
    local types = M.types[key]
    if types == nil then
      error(string.format("oma.setup: unknown option '%s' (see :help oma-options)", tostring(key)), 0)
    end
    local ok, why = pcall(vim.validate, { [key] = { value, types } })
    if not ok then
      error('oma.setup: ' .. tostring(why), 0)
    end
  end
  if type(opts.agent) == 'table' then
    check_agent(opts.agent, 'agent')
  end
  local seen = {}
  for index, agent in ipairs(opts.agents or {}) do
    check_agent(agent, string.format('agents[%d]', index))
    if seen[agent.name] then
      error(string.format("oma.setup: two agents are called '%s'", agent.name), 0)
    end
    seen[agent.name] = true
  end
  if opts.open ~= nil and not vim.tbl_contains(M.open_values, opts.open) then
    error('oma.setup: open must be one of ' .. table.concat(M.open_values, ', '), 0)
  end
end

local function named(list, name)
  for _, agent in ipairs(list) do
    if agent.name == name then
      return agent
    end
  end
  local names = {}
  for _, agent in ipairs(list) do
    names[#names + 1] = agent.name
  end
  error(string.format("oma.setup: agent '%s' is not one of agents (%s)", name, table.concat(names, ', ')), 0)
end

--- `current` with `opts` applied (checked first; errors name the option).
--- Shallow on purpose: a new `agent` or `agents` replaces the old one whole.
function M.merge(current, opts)
  check(opts)
  local config = vim.tbl_extend('force', current, opts)
  if type(opts.agent) == 'string' then
    config.agent = named(config.agents, opts.agent)
  elseif opts.agent == nil and opts.agents and #opts.agents > 0 then
    config.agent = opts.agents[1]
  end
  return config
end

--- Whether going from `old` to `new` needs a new host process.
function M.restarts_host(old, new)
  for _, key in ipairs(HOST_OPTIONS) do
    if not vim.deep_equal(old[key], new[key]) then
      return true
    end
  end
  return false
end

return M
