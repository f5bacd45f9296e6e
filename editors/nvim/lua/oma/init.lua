-- oma.nvim: ask oma-host agents from Neovim (0.7+), through the built-in LSP client.
--
--   require('oma').setup{
--     cmd = { 'oma-host' },            -- how to start the host
--     agent = { name = 'claude', provider = 'anthropic', model = '...', apiKeyEnv = 'ANTHROPIC_API_KEY' },
--     state_dir = nil,                 -- initializationOptions.stateDir
--     permission = nil,                -- function(request) -> true to approve (default: a confirm() dialog)
--     open = 'vsplit',                 -- how the reply buffer is shown: vsplit, split, tab, none
--   }
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

local client = require('oma.client')
local input = require('oma.input')
local permission = require('oma.permission')
local reply = require('oma.reply')

local M = {}

local defaults = {
  cmd = { 'oma-host' },
  cmd_cwd = nil,
  cmd_env = nil,
  state_dir = nil,
  agent = {
    name = 'claude',
    provider = 'anthropic',
    model = 'claude-sonnet-4-5',
    apiKeyEnv = 'ANTHROPIC_API_KEY',
  },
  permission = nil,
  open = 'vsplit',
}

M.config = vim.deepcopy(defaults)

local runs = {} -- run number -> run
local by_token = {} -- progress token -> run
local counter = 0
local last_run = nil
local agent_state = { id = nil, waiting = nil }

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
  reply.error(reply.buffer(), message)
  finish(run, 'error')
  vim.notify('oma: ' .. message, vim.log.levels.ERROR)
end

local function cancelled(run, partial)
  if run.done then
    return
  end
  run.result = partial
  reply.cancelled(reply.buffer(), run, partial)
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
  reply.finish(reply.buffer(), run, result)
  finish(run, 'done')
  if not result.success then
    local status = result.status or {}
    vim.notify(
      string.format('oma: %s: %s', tostring(status.code), tostring(status.message or result.output)),
      vim.log.levels.WARN
    )
  end
end

--- The agentId of the configured agent, created on first use; `done(err, agent_id)`.
local function ensure_agent(done)
  if agent_state.id then
    done(nil, agent_state.id)
    return
  end
  if agent_state.waiting then
    table.insert(agent_state.waiting, done)
    return
  end
  agent_state.waiting = { done }
  client.request(M.config, 'agent/create', { config = M.config.agent }, function(err, result)
    local waiting = agent_state.waiting or {}
    agent_state.waiting = nil
    if not err then
      agent_state.id = result.agentId
    end
    for _, callback in ipairs(waiting) do
      callback(err, result and result.agentId)
    end
  end)
end

local function forget_agent(dispose)
  local id = agent_state.id
  agent_state.id = nil
  agent_state.waiting = nil
  if dispose and id and client.get() then
    client.request(M.config, 'agent/dispose', { agentId = id }, function() end)
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
  reply.section(buf, kind, agent.name, shown)

  local function send(agent_id, retried)
    local params = build_params(agent, agent_id, run)
    client.request(M.config, method, params, function(err, result)
      if type(err) == 'table' and err.code == -32001 and needs_agent and not retried then
        -- The host no longer knows the agent (it was restarted): create it again.
        forget_agent(false)
        ensure_agent(function(create_err, new_id)
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
    ensure_agent(function(err, agent_id)
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
    reply.event(reply.buffer(), run, value)
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
  forget_agent(false)
  for _, run in pairs(runs) do
    fail(run, string.format('oma-host exited (code %s, signal %s)', tostring(code), tostring(signal)))
  end
end

-- -- public API -----------------------------------------------------------------------

function M.setup(opts)
  opts = opts or {}
  vim.validate({
    cmd = { opts.cmd, 'table', true },
    agent = { opts.agent, 'table', true },
    permission = { opts.permission, 'function', true },
    open = { opts.open, 'string', true },
  })
  if opts.agent and type(opts.agent.name) ~= 'string' then
    error('oma.setup: agent.name must be a string', 2)
  end
  local restart = false
  for _, key in ipairs({ 'cmd', 'cmd_cwd', 'cmd_env', 'state_dir' }) do
    if opts[key] ~= nil and not vim.deep_equal(opts[key], M.config[key]) then
      restart = true
    end
  end
  -- Shallow on purpose: a new `agent` replaces the old one whole.
  for key, value in pairs(opts) do
    M.config[key] = value
  end
  forget_agent(not restart)
  if restart then
    for _, run in pairs(runs) do
      fail(run, 'the host was restarted by setup()')
    end
    client.stop()
  end
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
  local name = M.config.agent.name
  local function show(messages)
    reply.history(name, messages, M.config.open)
    if done then
      done(messages)
    end
  end
  if agent_state.id == nil then
    show({}) -- no turn yet: nothing to ask the host for
    return
  end
  client.request(M.config, 'agent/history', { agentId = agent_state.id }, function(err, result)
    if type(err) == 'table' and err.code == -32001 then
      forget_agent(false)
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
  local function said()
    vim.notify('oma: the conversation with ' .. M.config.agent.name .. ' was reset', vim.log.levels.INFO)
    if done then
      done()
    end
  end
  if agent_state.id == nil then
    said()
    return
  end
  client.request(M.config, 'agent/reset', { agentId = agent_state.id }, function(err)
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
  forget_agent(false)
  client.stop()
end

return M
