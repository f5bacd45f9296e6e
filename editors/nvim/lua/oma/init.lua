-- oma.nvim: ask oma-host agents from Neovim (0.7+), through the built-in LSP client.
-- The setup and every command and option are in doc/oma.txt (:help oma).
--
-- Which method serves which command:
--   :OmaAsk, :OmaImage  one-off asks, agent/stream: the reply streams into the
--                       reply buffer from `$/progress` events as it arrives.
--   :OmaChat            a conversation turn, agent/prompt: kept in the agent's
--                       history (the protocol gives prompts no stream, so the
--                       reply is written when the turn completes).
--   :OmaRun             the selected lines through oma/runAgent (a fresh agent).
--   :OmaHistory, :OmaReset  the conversation of :OmaChat.
--   :OmaCancel          `$/cancelRequest` for every run in flight.
--   :OmaAgent           which of `setup{agents}` the next command asks.
--   :OmaModels          the agent's model from its provider's list (models/list),
--                       for the rest of the session (until setup() is called again).

local agents = require('oma.agents')
local client = require('oma.client')
local input = require('oma.input')
local options = require('oma.options')
local permission = require('oma.permission')
local reply = require('oma.reply')

local M = {}

M.config = options.defaults()

local runs = {} -- run number -> run
local by_token = {} -- progress token -> run
local counter = 0
local last_run = nil

-- -- errors -------------------------------------------------------------------

--- One line per error, as `oma-host console` prints it:
--- `error -32602 InvalidMessageError at input: ...` (the path shown once).
function M.describe_error(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local data = type(err.data) == 'table' and err.data or {}
  local message = tostring(err.message or '')
  local path = (type(data.path) == 'string' and data.path ~= '') and data.path or nil
  if path and message:sub(1, #path) == path then
    message = (message:sub(#path + 1):gsub('^[%s:]+', ''))
  end
  local head = 'error ' .. tostring(err.code)
  if type(data.type) == 'string' then
    head = head .. ' ' .. data.type
  end
  if path then
    head = head .. ' at ' .. path
  end
  return ((head .. ': ' .. message):gsub('%s*\n%s*', ' '))
end

-- -- runs -----------------------------------------------------------------------

local function finish(run, how)
  run.done = true
  run.outcome = how
  runs[run.n] = nil
  by_token[run.stream_token] = nil
  by_token[run.work_token] = nil
  last_run = run
end

local function fail(run, err)
  if run.done then
    return
  end
  local message = M.describe_error(err)
  run.error = message
  reply.error(run, message)
  finish(run, 'error')
  vim.notify('oma: ' .. message, vim.log.levels.ERROR)
end

local function cancelled(run, partial)
  if run.done then
    return
  end
  run.result = partial
  reply.cancelled(run, partial)
  finish(run, 'cancelled')
end

local function on_response(run, err, result)
  if run.done then
    return
  end
  if err then
    if type(err) == 'table' and err.code == -32800 then
      cancelled(run, type(err.data) == 'table' and err.data.partial or nil)
    else
      fail(run, err)
    end
    return
  end
  run.result = result
  reply.finish(run, result)
  finish(run, 'done')
  if not result.success then
    local status = result.status or {}
    vim.notify(
      string.format('oma: %s: %s', tostring(status.code), tostring(status.message or result.output)),
      vim.log.levels.WARN
    )
  end
end

--- Start a run: write the heading, then send `method` with `params(agent_id, run)`.
local function start_run(kind, method, ask, build_params, needs_agent)
  local agent = M.config.agent
  local ok, shown = pcall(input.blocks, ask)
  if not ok then
    vim.notify('oma: ' .. tostring(shown), vim.log.levels.ERROR)
    return nil
  end
  counter = counter + 1
  local prefix = string.format('oma-nvim-%d-%d', vim.fn.getpid(), counter)
  local run = {
    n = counter,
    kind = kind,
    agent = agent.name,
    text = '',
    stream_token = prefix .. '-stream',
    work_token = prefix .. '-work',
    run_id = prefix .. '-' .. tostring(os.time()),
    progress = {},
    errors_shown = {}, -- error messages in the reply buffer, each shown once
    done = false,
  }
  runs[run.n] = run
  by_token[run.stream_token] = run
  by_token[run.work_token] = run
  local buf = reply.buffer()
  reply.show(buf, M.config.open)
  if kind == 'run' and ask.selection then
    local count = select(2, ask.selection.text:gsub('\n', '')) + 1
    shown = { { type = 'text', text = string.format('[%d selected lines]', count) } }
  end
  run.place = reply.section(buf, kind, agent.name, shown)

  local function send(agent_id, retried)
    local params = build_params(agent, agent_id, run)
    client.request(M.config, method, params, function(err, result)
      if type(err) == 'table' and err.code == -32001 and needs_agent and not retried then
        -- The host no longer knows the agent (it was restarted): create it again.
        agents.forget(agent)
        agents.ensure(M.config, agent, function(create_err, new_id)
          if create_err then
            fail(run, create_err)
          else
            send(new_id, true)
          end
        end)
        return
      end
      on_response(run, err, result)
    end, function(request_id)
      run.request_id = request_id
      if run.cancel_requested then
        client.cancel(request_id)
      end
    end)
  end

  if needs_agent then
    agents.ensure(M.config, agent, function(err, agent_id)
      if run.done then
        return
      elseif err then
        fail(run, err)
      else
        send(agent_id, false)
      end
    end)
  else
    send(nil, false)
  end
  return run
end

-- -- handlers (host -> client) ----------------------------------------------------

local function on_progress(err, params, ctx, config)
  local run = type(params) == 'table' and by_token[params.token] or nil
  if run == nil then
    return vim.lsp.handlers['$/progress'](err, params, ctx, config)
  end
  local value = params.value
  if params.token == run.stream_token then
    reply.event(run, value)
    return
  end
  -- Work-done progress: also to the default handler, so statusline plugins
  -- (LspProgressUpdate, vim.lsp.util.get_progress_messages) show the run.
  run.work = value
  vim.lsp.handlers['$/progress'](err, params, ctx, config)
  if type(value) == 'table' and value.kind == 'end' and value.message == 'cancelled' and run.cancel_requested then
    -- Neovim's RPC layer never hands a -32800 answer to the request's handler
    -- (it is "RPC-internal" there), so the host's work-done `end` with status
    -- "cancelled" is its word that the run stopped; the text so far is shown.
    cancelled(run, nil)
  end
end

client.handlers['$/progress'] = on_progress

client.handlers['oma/progress'] = function(_, params)
  for _, run in pairs(runs) do
    if type(params) == 'table' and params.runId == run.run_id then
      table.insert(run.progress, params)
    end
  end
end

client.handlers['agent/requestPermission'] = function(_, params)
  return permission.answer(params, M.config.permission)
end

client.on_exit = function(code, signal)
  agents.forget_all(M.config, false)
  for _, run in pairs(runs) do
    fail(run, string.format('oma-host exited (code %s, signal %s)', tostring(code), tostring(signal)))
  end
end

-- -- public API -----------------------------------------------------------------------

function M.setup(opts)
  opts = opts or {}
  local config = options.merge(M.config, opts)
  local restart = options.restarts_host(M.config, config)
  agents.forget_all(M.config, not restart)
  M.config = config
  if restart then
    for _, run in pairs(runs) do
      fail(run, 'the host was restarted by setup()')
    end
    client.stop()
  end
end

--- Ask the configured agent called `name` from now on (:OmaAgent {name}).
--- Each agent keeps its own conversation. Returns false for an unknown name.
function M.use_agent(name)
  local agent = agents.find(M.config, name)
  if agent == nil then
    local names = table.concat(agents.names(M.config), ', ')
    local message = string.format("oma: no agent called '%s'; the agents are: %s", tostring(name), names)
    vim.notify(message, vim.log.levels.ERROR)
    return false
  end
  M.config.agent = agent
  vim.notify('oma: asking ' .. agents.describe(agent), vim.log.levels.INFO)
  return true
end

--- Offer the configured agents through vim.ui.select (:OmaAgent without a name).
function M.pick_agent()
  local current = M.config.agent.name
  vim.ui.select(agents.names(M.config), {
    prompt = 'Agent to ask:',
    format_item = function(name)
      local line = agents.describe(agents.find(M.config, name))
      return name == current and (line .. ' [current]') or line
    end,
  }, function(name)
    if name ~= nil then
      M.use_agent(name)
    end
  end)
end

--- The names `:OmaAgent` completes.
function M.agent_names()
  return agents.names(M.config)
end

-- -- models ---------------------------------------------------------------------------

--- The models/list params for `agent`: the provider, baseURL and apiKeyEnv it uses.
local function models_params(agent)
  local params = vim.empty_dict()
  for _, field in ipairs({ 'provider', 'baseURL', 'apiKeyEnv' }) do
    if type(agent[field]) == 'string' then
      params[field] = agent[field]
    end
  end
  return params
end

--- The models of the current agent's provider (models/list; the host caches the
--- list for its session). `done(err, models)`: `err` is a one-line message,
--- `models` a list of {id, displayName?, ownedBy?, created?}.
function M.models(done)
  local agent = M.config.agent
  if type(agent.backend) == 'table' then
    done(string.format('%s is an external agent (backend: %s): it has no provider model list',
      agent.name, tostring(agent.backend.kind)))
    return
  end
  client.request(M.config, 'models/list', models_params(agent), function(err, result)
    if err then
      done(M.describe_error(err))
    else
      done(nil, result.models)
    end
  end)
end

--- Ask the current agent with `model` from now on, keeping its conversation: a
--- new agent is created with the old one's history (agent/history into
--- `config.history`) and the old one disposed. Lasts until setup() is called
--- again. `done(err)`, `err` a one-line message or nil.
function M.set_model(model, done)
  done = done or function() end
  local agent = M.config.agent
  local switched = vim.tbl_extend('force', {}, agent, { model = model })
  local function adopt(agent_id)
    local list = {}
    for index, configured in ipairs(M.config.agents or {}) do
      list[index] = configured == agent and switched or configured
    end
    M.config.agents = list -- a new list: the table given to setup() stays as it was
    M.config.agent = switched
    agents.forget(agent)
    if agent_id then
      agents.adopt(switched, agent_id)
    end
    vim.notify(string.format('oma: %s uses %s from now on', agent.name, model), vim.log.levels.INFO)
    done(nil)
  end
  local old_id = agents.id(agent)
  if old_id == nil then
    adopt(nil) -- not created yet: it starts with the new model
    return
  end
  client.request(M.config, 'agent/history', { agentId = old_id }, function(err, result)
    if err and not (type(err) == 'table' and err.code == -32001) then
      done(M.describe_error(err))
      return
    end
    local create = vim.tbl_extend('force', {}, switched)
    if not err and #result.messages > 0 then
      create.history = result.messages
    end
    client.request(M.config, 'agent/create', { config = create }, function(create_err, created)
      if create_err then
        done(M.describe_error(create_err)) -- the old agent stays as it was
        return
      end
      adopt(created.agentId)
      client.request(M.config, 'agent/dispose', { agentId = old_id }, function() end)
    end)
  end)
end

--- Offer the provider's models through vim.ui.select (:OmaModels); the choice
--- becomes the agent's model (set_model). `done(err, model)` is for tests.
function M.pick_model(done)
  done = done or function() end
  local agent = M.config.agent
  M.models(function(err, models)
    if err then
      vim.notify('oma: ' .. err, vim.log.levels.ERROR)
      done(err)
      return
    end
    if #models == 0 then
      local message = string.format('the provider of %s lists no models', agent.name)
      vim.notify('oma: ' .. message, vim.log.levels.ERROR)
      done(message)
      return
    end
    local by_id = {}
    local ids = {}
    for _, info in ipairs(models) do
      by_id[info.id] = info
      ids[#ids + 1] = info.id
    end
    vim.ui.select(ids, {
      prompt = string.format('Model for %s:', agent.name),
      format_item = function(id)
        local info = by_id[id]
        local line = id
        if type(info.displayName) == 'string' and info.displayName ~= id then
          line = line .. ' (' .. info.displayName .. ')'
        end
        return id == agent.model and (line .. ' [current]') or line
      end,
    }, function(id)
      if id == nil or id == agent.model then
        done(nil, nil)
        return
      end
      M.set_model(id, function(set_err)
        if set_err then
          vim.notify('oma: ' .. set_err, vim.log.levels.ERROR)
        end
        done(set_err, id)
      end)
    end)
  end)
end

local function stream_params(agent, agent_id, run, ask)
  return {
    agentId = agent_id,
    input = input.run_input(agent, ask),
    partialResultToken = run.stream_token,
    workDoneToken = run.work_token,
  }
end

--- One-off ask, streamed (agent/stream). `selection`: {text, file_name?, filetype?}.
function M.ask(question, selection)
  local ask = { question = question, selection = selection }
  return start_run('ask', 'agent/stream', ask, function(agent, agent_id, run)
    return stream_params(agent, agent_id, run, ask)
  end, true)
end

--- A question about an image file, streamed (agent/stream).
function M.image(path, question)
  local ok, block = pcall(input.image_block, path)
  if not ok then
    vim.notify('oma: ' .. tostring(block), vim.log.levels.ERROR)
    return nil
  end
  local ask = { question = question or '', image = block }
  return start_run('image', 'agent/stream', ask, function(agent, agent_id, run)
    return stream_params(agent, agent_id, run, ask)
  end, true)
end

--- A conversation turn (agent/prompt), kept in the agent's history.
function M.chat(question, selection)
  local ask = { question = question, selection = selection }
  return start_run('chat', 'agent/prompt', ask, function(agent, agent_id, run)
    return { agentId = agent_id, input = input.prompt_input(agent, ask), workDoneToken = run.work_token }
  end, true)
end

--- The selection through oma/runAgent: a fresh one-off agent, with progress notifications.
function M.run(selection)
  local ask = { question = '', selection = selection }
  return start_run('run', 'oma/runAgent', ask, function(agent, _, run)
    return {
      config = agent,
      input = input.run_input(agent, ask),
      progress = true,
      runId = run.run_id,
      workDoneToken = run.work_token,
    }
  end, false)
end

--- Show the conversation (agent/history) in the `oma://history` buffer.
function M.history(done)
  local agent = M.config.agent
  local function show(messages)
    reply.history(agent.name, messages, M.config.open)
    if done then
      done(messages)
    end
  end
  local agent_id = agents.id(agent)
  if agent_id == nil then
    show({}) -- no turn yet: nothing to ask the host for
    return
  end
  client.request(M.config, 'agent/history', { agentId = agent_id }, function(err, result)
    if type(err) == 'table' and err.code == -32001 then
      agents.forget(agent)
      show({})
    elseif err then
      vim.notify('oma: ' .. M.describe_error(err), vim.log.levels.ERROR)
    else
      show(result.messages)
    end
  end)
end

--- Clear the conversation (agent/reset).
function M.reset(done)
  local agent = M.config.agent
  local function said()
    vim.notify('oma: the conversation with ' .. agent.name .. ' was reset', vim.log.levels.INFO)
    if done then
      done()
    end
  end
  local agent_id = agents.id(agent)
  if agent_id == nil then
    said()
    return
  end
  client.request(M.config, 'agent/reset', { agentId = agent_id }, function(err)
    if err and not (type(err) == 'table' and err.code == -32001) then
      vim.notify('oma: ' .. M.describe_error(err), vim.log.levels.ERROR)
    else
      said()
    end
  end)
end

--- Cancel every run in flight; returns how many there were.
function M.cancel()
  local count = 0
  for _, run in pairs(runs) do
    count = count + 1
    run.cancel_requested = true
    client.cancel(run.request_id) -- not sent yet: cancelled as soon as it is
  end
  if count == 0 then
    vim.notify('oma: nothing to cancel', vim.log.levels.INFO)
  end
  return count
end

--- Runs in flight, and the last finished run ({kind, text, result, error, outcome, progress}).
function M.status()
  local count = 0
  for _ in pairs(runs) do
    count = count + 1
  end
  return { running = count, last = last_run, host = client.info() }
end

--- Stop the host; the next command starts a new one.
function M.stop()
  agents.forget_all(M.config, false)
  client.stop()
end

return M
