-- The oma-host process, spawned and spoken to by Neovim's built-in LSP client
-- (vim.lsp.start_client, present since 0.5; vim.lsp.start is 0.8+ and not used).
--
-- The client sends `initialize` itself and reads `capabilities` from the answer;
-- oma-host answers `{capabilities = {agent = {...}}, serverInfo}`, which 0.7
-- accepts (it fills in defaults for every LSP capability that is absent).
-- Requests made before that answer are queued and sent once `on_init` runs,
-- because 0.7 would otherwise write them right behind `initialize`.
--
-- When the host exits, the next request starts a new one: that is the restart
-- on crash. The caller hears of the exit through `on_exit` (in-flight runs fail,
-- agentIds are forgotten).

local M = {}

local state = {
  client_id = nil,
  ready = false,
  queue = {},
}

--- Set by init.lua: the client's handlers, and what to do when the host exits.
M.handlers = {}
M.on_exit = function(_code, _signal) end

local function flush()
  local queue = state.queue
  state.queue = {}
  local client = vim.lsp.get_client_by_id(state.client_id)
  for _, send in ipairs(queue) do
    send(client)
  end
end

local function init_options(config)
  if config.state_dir and config.state_dir ~= '' then
    return { stateDir = config.state_dir }
  end
  return nil -- omitted: the host rejects unknown initializationOptions fields, not a missing object
end

--- Start the host (no-op when one is running or starting). Returns false if it could not spawn.
function M.start(config)
  if state.client_id ~= nil then
    return true
  end
  local id = vim.lsp.start_client({
    name = 'oma-host',
    cmd = config.cmd,
    cmd_cwd = config.cmd_cwd,
    cmd_env = config.cmd_env,
    init_options = init_options(config),
    handlers = M.handlers,
    on_init = function(client, result)
      vim.schedule(function()
        if client.id == state.client_id then
          state.ready = true
          state.server_info = result and result.serverInfo
          flush()
        end
      end)
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        if client_id == state.client_id then
          state.client_id = nil
          state.ready = false
          local queue = state.queue
          state.queue = {}
          for _, send in ipairs(queue) do
            send(nil)
          end
          M.on_exit(code, signal)
        end
      end)
    end,
  })
  if id == nil then
    return false
  end
  state.client_id = id
  state.ready = false
  return true
end

--- The running, initialized client, or nil.
function M.get()
  if state.client_id == nil or not state.ready then
    return nil
  end
  return vim.lsp.get_client_by_id(state.client_id)
end

--- Call `send(client)` once the host is initialized (starting it if needed);
--- `send(nil)` when it cannot be started or exits first.
function M.with_client(config, send)
  if state.client_id == nil and not M.start(config) then
    send(nil)
    return
  end
  if state.ready then
    send(vim.lsp.get_client_by_id(state.client_id))
  else
    table.insert(state.queue, send)
  end
end

local NOT_RUNNING = 'oma-host is not running: it could not be started or it exited (see :messages)'

--- Send a request; `on_response(err, result)`, and `on_sent(request_id)` once it is on the wire.
--- `err` is the JSON-RPC error table, or a string when the host is not there to answer.
function M.request(config, method, params, on_response, on_sent)
  M.with_client(config, function(client)
    if client == nil then
      on_response(NOT_RUNNING, nil)
      return
    end
    local ok, request_id = client.request(method, params, function(err, result)
      on_response(err, result)
    end)
    if not ok then
      on_response(NOT_RUNNING, nil)
    elseif on_sent then
      on_sent(request_id)
    end
  end)
end

--- `$/cancelRequest` for a request of the current host.
function M.cancel(request_id)
  local client = M.get()
  if client ~= nil and request_id ~= nil then
    client.cancel_request(request_id)
  end
end

--- Stop the host (shutdown + exit); the next request starts a new one.
function M.stop()
  local id = state.client_id
  state.client_id = nil
  state.ready = false
  state.queue = {}
  local client = id and vim.lsp.get_client_by_id(id)
  if client then
    client.stop()
  end
end

function M.info()
  return { client_id = state.client_id, ready = state.ready, server_info = state.server_info }
end

return M
