-- Drives oma.nvim in `nvim --headless -u NONE` against the real oma-host and
-- checks what a person would see: the reply buffer and the messages.
--
--   nvim --headless -u NONE -c 'luafile editors/nvim/tests/run.lua'
--
-- Run from the repository root (or set OMA_REPO_ROOT). The host command is
-- `python3 -m oma_host`, or the words of $OMA_HOST_COMMAND. Prints one line per
-- test and "N passed, N failed"; exits non-zero on any failure.

local root = vim.env.OMA_REPO_ROOT or vim.fn.getcwd()
-- The hosts the plugin starts inherit this: they offer the in-process test provider.
vim.env.OMA_HOST_TEST_PROVIDER = '1'
vim.opt.runtimepath:prepend(root .. '/editors/nvim')
vim.cmd('runtime! plugin/oma.lua')

local oma = require('oma')
local reply = require('oma.reply')

local python = vim.env.PYTHON or 'python3'
local host_cmd = { python, '-m', 'oma_host' }
if vim.env.OMA_HOST_COMMAND and vim.env.OMA_HOST_COMMAND ~= '' then
  host_cmd = vim.split(vim.env.OMA_HOST_COMMAND, '%s+', { trimempty = true })
end
local png = root .. '/tests/editors/fixtures/red-square.png'
local tmp = vim.fn.tempname()
vim.fn.mkdir(tmp, 'p')

-- Capture what the plugin tells the person.
local notes = {}
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level })
end

local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

-- -- helpers --------------------------------------------------------------------------

local function fail(message)
  error(message, 2)
end

local function check(condition, message)
  if not condition then
    error(message or 'check failed', 2)
  end
end

local function equal(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    local message = string.format('%s:\n  expected %s\n  got      %s', what or 'values differ',
      vim.inspect(expected), vim.inspect(actual))
    error(message, 2)
  end
end

local function wait_for(what, condition, timeout)
  if not vim.wait(timeout or 30000, condition, 20) then
    error('timed out waiting for ' .. what, 2)
  end
end

local function lines()
  return vim.api.nvim_buf_get_lines(reply.buffer(), 0, -1, false)
end

local function text()
  return table.concat(lines(), '\n')
end

local function finished()
  wait_for('the run to finish', function()
    return oma.status().running == 0
  end)
  return oma.status().last
end

local function contains(haystack, needle, what)
  if not haystack:find(needle, 1, true) then
    error(string.format('%s: %q not found in\n%s', what or 'missing text', needle, haystack), 2)
  end
end

local function use(agent, extra)
  local opts = { cmd = host_cmd, cmd_cwd = root, agent = agent, open = 'none' }
  for key, value in pairs(extra or {}) do
    opts[key] = value
  end
  oma.setup(opts)
  vim.api.nvim_buf_set_lines(reply.buffer(), 0, -1, false, {})
  notes = {}
end

--- The names of the host's agents (agent/list) this test made, oldest first:
--- those of the configured agents (earlier tests' agents may be still being disposed).
local function agent_names()
  local ours = {}
  for _, name in ipairs(require('oma.agents').names(oma.config)) do
    ours[name] = true
  end
  local answer
  require('oma.client').request(oma.config, 'agent/list', vim.empty_dict(), function(err, result)
    answer = { err = err, result = result }
  end)
  wait_for('agent/list', function()
    return answer ~= nil
  end)
  assert(answer.err == nil, vim.inspect(answer.err))
  local names = {}
  for _, agent in ipairs(answer.result.agents) do
    if ours[agent.name] then
      names[#names + 1] = agent.name
    end
  end
  return names
end

local function process_agent(name, script)
  return { name = name, backend = { kind = 'process', command = 'sh', args = { '-c', script } } }
end

local function echo_agent(name, model)
  return { name = name or 'echo', provider = 'test', model = model or 'echo' }
end

local function pid_alive(pid)
  return vim.loop.kill(pid, 0) == 0
end

-- -- tests ----------------------------------------------------------------------------

local tests = {}

tests[#tests + 1] = { 'the 0.7 LSP client accepts the host\'s initialize answer', function()
  use(echo_agent())
  require('oma.client').start(oma.config)
  wait_for('initialize', function()
    return oma.status().host.ready
  end)
  local client = vim.lsp.get_client_by_id(oma.status().host.client_id)
  check(client.initialized, 'client.initialized')
  local agent = client.server_capabilities.agent
  check(type(agent) == 'table', 'capabilities.agent: ' .. vim.inspect(client.server_capabilities))
  check(vim.tbl_contains(agent.methods, 'agent/stream'), 'agent/stream in methods')
  check(agent.structuredInput == true, 'structuredInput')
  equal(oma.status().host.server_info.name, 'oma-host', 'serverInfo.name')
  -- 0.7 keeps the capabilities as sent and fills in LSP defaults beside them
  -- (resolved_capabilities), so a server that declares none of them is fine.
  local resolved = client.resolved_capabilities
  check(resolved.text_document_open_close == false, 'no document sync is assumed')
  check(client.supports_method('agent/stream'), 'methods it does not know are assumed supported')
  out(string.format('# nvim %s: initialize accepted; server_capabilities keys: %s; resolved hover: %s',
    tostring(vim.version().major) .. '.' .. vim.version().minor .. '.' .. vim.version().patch,
    table.concat(vim.tbl_keys(client.server_capabilities), ','), tostring(resolved.hover)))
end }

tests[#tests + 1] = { ':OmaAsk streams the reply into the buffer as it arrives', function()
  local gate = tmp .. '/gate'
  use(process_agent('p', 'echo first; while [ ! -e ' .. gate .. ' ]; do sleep 0.02; done; echo second'))
  vim.cmd('OmaAsk hello there')
  wait_for('the first line of the reply', function()
    return vim.tbl_contains(lines(), 'first')
  end)
  -- The run is still going (the process waits for the gate): this text was streamed.
  equal(oma.status().running, 1, 'runs in flight while streaming')
  check(not vim.tbl_contains(lines(), 'second'), 'second line before the gate opened')
  io.open(gate, 'w'):close()
  local run = finished()
  equal(run.outcome, 'done', 'outcome')
  equal(run.result.output, 'first\nsecond\n', 'result.output')
  equal(lines(), { '## ask · p', '', '> hello there', '', 'first', 'second', '' }, 'reply buffer')
  -- The work-done progress reached Neovim's progress table (statusline plugins read it).
  local client = vim.lsp.get_client_by_id(oma.status().host.client_id)
  local progress = client.messages.progress[run.work_token]
  check(progress ~= nil, 'work-done progress for ' .. run.work_token)
  equal({ progress.title, progress.message, progress.done }, { 'p', 'ok', true }, 'work-done progress')
  equal(notes, {}, 'no messages')
end }

tests[#tests + 1] = { 'interleaved runs: each reply stays under its own heading', function()
  local gate = tmp .. '/interleave-gate'
  local slow = process_agent('slow', 'echo slow-first; while [ ! -e ' .. gate .. ' ]; do sleep 0.02; done; '
    .. 'printf slow-; echo second')
  local quick = process_agent('quick', 'echo quick-reply')
  use(nil, { agents = { slow, quick } })
  vim.cmd('OmaAsk first question')
  wait_for('the slow run to stream', function()
    return vim.tbl_contains(lines(), 'slow-first')
  end)
  vim.cmd('OmaAgent quick')
  vim.cmd('OmaAsk second question')
  wait_for('the quick run to finish while the slow one streams', function()
    return oma.status().running == 1 and oma.status().last ~= nil and oma.status().last.agent == 'quick'
  end)
  io.open(gate, 'w'):close()
  equal(finished().agent, 'slow', 'the slow run ends last')
  equal(lines(), {
    '## ask · slow', '', '> first question', '', 'slow-first', 'slow-second', '',
    '## ask · quick', '', '> second question', '', 'quick-reply', '',
  }, 'reply buffer')

  -- A conversation turn while an image question streams: slow-echo sends 16
  -- characters every 50 ms of a reply that repeats the system prompt, so this
  -- one streams for about 7 s, on one line, which the turn's heading must not split.
  local looker = echo_agent('looker', 'slow-echo')
  looker.systemPrompt = string.rep('look ', 400)
  use(nil, { agents = { looker, process_agent('talker', 'echo talked') } })
  vim.cmd('OmaImage ' .. png .. ' what is this?')
  wait_for('the image reply to start streaming', function()
    return (lines()[6] or '') ~= ''
  end)
  vim.cmd('OmaAgent talker')
  vim.cmd('OmaChat hello')
  wait_for('the turn to finish while the image reply streams', function()
    return oma.status().running == 1 and oma.status().last ~= nil and oma.status().last.agent == 'talker'
  end)
  local image = finished()
  equal({ image.agent, image.outcome }, { 'looker', 'done' }, 'the image run')
  local all = lines()
  local turn = nil
  for index, line in ipairs(all) do
    turn = turn or (line == '## chat · talker' and index or nil)
  end
  check(turn ~= nil, 'the turn has a heading:\n' .. text())
  equal(vim.list_slice(all, turn), { '## chat · talker', '', '> hello', '', 'talked', '' }, 'the turn')
  equal(all[1], '## image · looker', 'the image heading comes first')
  equal(table.concat(vim.list_slice(all, 6, turn - 1), ''), image.result.output,
    'the whole image reply sits under its heading')
end }

tests[#tests + 1] = { 'an image for a process agent: the InvalidMessageError with its path', function()
  local marker = tmp .. '/spawned'
  use(process_agent('p', 'touch ' .. marker .. '; cat'))
  vim.cmd('OmaImage ' .. png .. ' what is this?')
  local run = finished()
  equal(run.outcome, 'error', 'outcome')
  local expected = "error -32602 InvalidMessageError at input: agent 'p' has a process backend, which accepts "
    .. 'string prompts only; send a string instead of a message list or content blocks'
  equal(run.error, expected, 'formatted error')
  equal(notes, { { message = 'oma: ' .. expected, level = vim.log.levels.ERROR } }, 'vim.notify')
  equal(lines()[#lines() - 1], '[' .. expected .. ']', 'error line in the reply buffer')
  equal(lines()[3], '> what is this?', 'question in the heading')
  check(lines()[4]:match('^> %[image image/png, %d+ base64 chars%]$'), 'image in the heading: ' .. lines()[4])
  check(vim.fn.filereadable(marker) == 0, 'the process must not have been spawned')
end }

tests[#tests + 1] = { ':OmaCancel stops a streaming run; the host keeps serving', function()
  use(echo_agent('slow', 'slow-echo'))
  vim.cmd('OmaAsk a question long enough to stream for a good while')
  wait_for('some streamed text', function()
    return (lines()[5] or '') ~= ''
  end)
  equal(oma.cancel(), 1, 'runs cancelled')
  local run = finished()
  equal(run.outcome, 'cancelled', 'outcome')
  local all = lines()
  equal(all[#all - 1], '[cancelled]', 'cancel marker')
  equal(all[#all], '', 'the buffer ends with a fresh line')
  -- What streamed is a beginning of the reply the run would have given, not all of it.
  use(echo_agent('slow', 'echo'))
  vim.cmd('OmaAsk a question long enough to stream for a good while')
  local full = finished()
  equal(full.outcome, 'done', 'the next ask works')
  check(run.text ~= '' and full.result.output:sub(1, #run.text) == run.text, 'partial is a prefix: ' .. run.text)
  check(#run.text < #full.result.output, 'the cancelled run stopped early')
end }

tests[#tests + 1] = { ':OmaCancel ends the process of a process agent', function()
  local pidfile = tmp .. '/pid'
  use(process_agent('sleeper', 'echo $$ > ' .. pidfile .. '; echo started; exec sleep 60'))
  vim.cmd('OmaAsk go')
  wait_for('the process to start', function()
    return vim.tbl_contains(lines(), 'started')
  end)
  local pid = tonumber(vim.fn.readfile(pidfile)[1])
  check(pid and pid_alive(pid), 'the process runs')
  oma.cancel()
  local run = finished()
  equal(run.outcome, 'cancelled', 'outcome')
  equal(run.text, 'started\n', 'partial text')
  wait_for('the process to be gone', function()
    return not pid_alive(pid)
  end, 15000)
end }

tests[#tests + 1] = { ':OmaImage sends the PNG as a base64 image block', function()
  use(echo_agent())
  vim.cmd('OmaImage ' .. png .. ' What colour is this square?')
  local run = finished()
  equal(run.outcome, 'done', 'outcome')
  local received = vim.json.decode(run.result.output)
  local expected_data = vim.fn.system({ 'base64', '-w0', png })
  equal(received.messages, {
    {
      role = 'user',
      content = {
        { type = 'text', text = 'What colour is this square?' },
        { type = 'image', source = { type = 'base64', media_type = 'image/png', data = expected_data } },
      },
    },
  }, 'what the provider received')
end }

--- Run `body(url)` with the provider simulator `argv` starts (it prints
--- `listening on URL`); stopped after it.
local function with_simulator(argv, body)
  local url = nil
  local job = vim.fn.jobstart(argv, {
    cwd = root,
    on_stdout = function(_, data)
      for _, line in ipairs(data) do
        url = url or line:match('listening on (http://%S+)')
      end
    end,
  })
  check(job > 0, 'simulator started')
  local ok, err = pcall(function()
    wait_for('the simulator', function()
      return url ~= nil
    end)
    body(url)
  end)
  vim.fn.jobstop(job)
  if not ok then
    error(err, 0)
  end
end

tests[#tests + 1] = { 'a question about a PNG over HTTP (the provider simulator)', function()
  with_simulator({ python, '-m', 'oma_host.testing.simulator', '--port', '0' }, function(url)
    use({ name = 'claude', provider = 'anthropic', model = 'm', baseURL = url, apiKey = 'sk-test' })
    vim.cmd('OmaImage ' .. png .. ' What is in this picture?')
    local run = finished()
    equal(run.outcome, 'done', 'outcome')
    local size = #vim.fn.system({ 'base64', '-w0', png })
    local expected = "simulator saw 1 message(s); the last user message holds: text 'What is in this picture?', "
      .. string.format('image image/png (%d chars)', size)
    equal(run.result.output, expected, 'reply')
    contains(text(), expected, 'reply buffer')
  end)
end }

tests[#tests + 1] = { ':OmaChat builds the history; :OmaHistory shows it; :OmaReset clears it', function()
  use(echo_agent('talker'))
  vim.cmd('OmaChat first question')
  equal(finished().outcome, 'done', 'first turn')
  vim.cmd('OmaChat second question')
  local second = finished()
  local seen = vim.json.decode(second.result.output)
  equal(#seen.messages, 3, 'the provider saw the conversation')
  local shown = nil
  oma.history(function(messages)
    shown = messages
  end)
  wait_for('the history', function()
    return shown ~= nil
  end)
  equal(#shown, 4, 'history length')
  local history = vim.api.nvim_buf_get_lines(vim.fn.bufnr('oma://history'), 0, -1, false)
  equal(
    { history[1], history[3], history[5], history[11] },
    { '# History of talker', '## 1. user', 'first question', '## 3. user' },
    'history buffer'
  )
  local reset = false
  oma.reset(function()
    reset = true
  end)
  wait_for('the reset', function()
    return reset
  end)
  shown = nil
  vim.cmd('OmaHistory')
  wait_for('the empty history', function()
    local now = vim.api.nvim_buf_get_lines(vim.fn.bufnr('oma://history'), 0, -1, false)
    return now[3] == '(empty: no conversation turns yet)'
  end)
  local said = { message = 'oma: the conversation with talker was reset', level = vim.log.levels.INFO }
  equal(notes[1], said, 'reset message')
end }

tests[#tests + 1] = { ':OmaRun sends the selected lines through oma/runAgent', function()
  use(process_agent('runner', 'cat'))
  local source = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(source)
  vim.api.nvim_buf_set_lines(source, 0, -1, false, { 'print(1)', 'print(2)', 'print(3)' })
  vim.bo.filetype = 'python'
  vim.cmd('1,2OmaRun')
  local run = finished()
  equal(run.outcome, 'done', 'outcome')
  equal(run.result.output, 'Selection:\n```python\nprint(1)\nprint(2)\n```', 'the selection is the input')
  local types = {}
  for _, event in ipairs(run.progress) do
    types[#types + 1] = event.type
  end
  equal(types, { 'agent_start', 'agent_complete' }, 'oma/progress events')
  equal(lines()[3], '> [2 selected lines]', 'heading')
end }

tests[#tests + 1] = { 'an ACP permission request is answered by setup{permission}', function()
  local script = root .. '/tests/interop/acp_agent/agent.mjs'
  if vim.fn.isdirectory(root .. '/tests/interop/acp_agent/node_modules/@agentclientprotocol/sdk') == 0 then
    fail('the ACP test agent is not installed: npm ci in tests/interop/acp_agent')
  end
  local asked = {}
  local backend = { kind = 'acp', command = 'node', args = { script }, permission = 'ask-client' }
  use({ name = 'coder', backend = backend }, {
    permission = function(request)
      table.insert(asked, request)
      return true
    end,
  })
  vim.cmd('OmaAsk please edit [permission]')
  local run = finished()
  equal(run.outcome, 'done', 'outcome')
  equal(#asked, 1, 'asked once')
  equal({ asked[1].agentName, asked[1].title, asked[1].kind }, { 'coder', 'Write notes.txt', 'edit' }, 'request')
  contains(run.result.output, 'permission outcome: opt-allow_once', 'agent output')
  contains(text(), '[permission] Write notes.txt: allow_once', 'permission line')
  local prompt = require('oma.permission').prompt(asked[1])
  equal(prompt.message, 'Agent "coder" asks permission: Write notes.txt (edit)', 'prompt message')
  equal(require('oma.permission').answer(asked[1], function()
    error('boom')
  end), { approve = false }, 'a failing callback rejects')
end }

tests[#tests + 1] = { "an LLM agent's file_edit asks, then lands in the buffer via workspace/applyEdit", function()
  local work = tmp .. '/edit'
  vim.fn.mkdir(work, 'p')
  local target = work .. '/notes.txt'
  vim.fn.writefile({ 'hello world', 'second line' }, target)
  local url = nil
  local script = root .. '/tests/editors/fixtures/edit_simulator.py'
  local job = vim.fn.jobstart({ python, script, 'notes.txt', 'world', 'nvim' }, {
    cwd = root,
    on_stdout = function(_, data)
      for _, line in ipairs(data) do
        url = url or line:match('listening on (http://%S+)')
      end
    end,
  })
  check(job > 0, 'simulator started')
  local ok, err = pcall(function()
    wait_for('the simulator', function()
      return url ~= nil
    end)
    local asked = {}
    local agent = {
      name = 'editor',
      provider = 'anthropic',
      model = 'm',
      baseURL = url,
      apiKey = 'sk-test',
      tools = { 'file_edit' },
      cwd = work,
    }
    use(agent, {
      permission = function(request)
        table.insert(asked, request)
        return 'session'
      end,
    })
    vim.cmd('OmaAsk edit the notes')
    local run = finished()
    equal(run.outcome, 'done', 'outcome')
    equal(#asked, 1, 'asked once')
    equal(asked[1].source, 'tool', 'source')
    equal(asked[1].tool.name, 'file_edit', 'tool')
    equal(asked[1].tool.target, 'notes.txt', 'target')
    local prompt = require('oma.permission').prompt(asked[1])
    equal(prompt.message, 'Agent "editor" asks permission: file_edit notes.txt (edit)', 'prompt message')
    local labels = {}
    for _, choice in ipairs(prompt.choices) do
      labels[#labels + 1] = choice.label
    end
    equal(labels, { '&Allow once', 'Always this &session', '&Deny' }, 'choices')
    equal(require('oma.permission').answer(asked[1], function()
      return 'session'
    end), { approve = true, scope = 'session' }, 'always this session')
    equal(require('oma.permission').answer(asked[1], function()
      return true
    end), { approve = true, scope = 'once' }, 'allow once')
    -- Neovim's LSP client applied the edit to a buffer; the host wrote nothing.
    local buffer = vim.fn.bufnr(target)
    check(buffer ~= -1, 'a buffer for the edited file')
    equal(vim.api.nvim_buf_get_lines(buffer, 0, -1, false), { 'hello nvim', 'second line' }, 'buffer')
    equal(vim.fn.readfile(target), { 'hello world', 'second line' }, 'the file on disk, unsaved')
    contains(run.result.output, 'edited', 'reply')
  end)
  vim.fn.jobstop(job)
  if not ok then
    error(err, 0)
  end
end }

tests[#tests + 1] = { 'a host that dies is started again by the next command', function()
  use(process_agent('p', 'echo started; sleep 60'))
  vim.cmd('OmaAsk first')
  wait_for('output', function()
    return oma.status().running == 1 and #lines() > 5
  end)
  local before = oma.status().host.client_id
  local client = vim.lsp.get_client_by_id(before)
  vim.loop.kill(client.rpc.pid, 'sigkill')
  local run = finished()
  equal(run.outcome, 'error', 'the run in flight fails')
  contains(run.error, 'oma-host exited', 'error')
  use(process_agent('p', 'echo back'))
  vim.cmd('OmaAsk again')
  local again = finished()
  equal(again.outcome, 'done', 'after the restart')
  equal(again.result.output, 'back\n', 'output')
  check(oma.status().host.client_id ~= before, 'a new client')
end }

tests[#tests + 1] = { 'a host command that cannot start is reported, and a fixed one works', function()
  use(echo_agent(), { cmd = { tmp .. '/no-such-oma-host' } })
  vim.cmd('OmaAsk hello')
  local run = finished()
  equal(run.outcome, 'error', 'outcome')
  equal(run.error, 'oma-host is not running: it could not be started or it exited (see :messages)', 'error')
  equal(notes[#notes].level, vim.log.levels.ERROR, 'shown as an error')
  use(echo_agent(), { cmd = host_cmd })
  vim.cmd('OmaAsk hello')
  equal(finished().outcome, 'done', 'after setup{cmd} is fixed')
end }

tests[#tests + 1] = { 'a missing API key: one error line in the reply buffer, one message', function()
  local variable = 'OMA_NVIM_TEST_UNSET_KEY'
  vim.env[variable] = nil
  local needle = 'the environment variable ' .. variable .. ' (apiKeyEnv) is not set'
  local function count()
    local in_buffer, in_notes = 0, 0
    for _, line in ipairs(lines()) do
      in_buffer = in_buffer + (line:find(needle, 1, true) and 1 or 0)
    end
    for _, note in ipairs(notes) do
      in_notes = in_notes + (note.message:find(needle, 1, true) and 1 or 0)
    end
    return in_buffer, in_notes
  end
  for _, command in ipairs({ 'OmaAsk hello', 'OmaChat hello' }) do
    use({ name = 'claude', provider = 'anthropic', model = 'm', apiKeyEnv = variable })
    vim.cmd(command)
    local run = finished()
    equal(run.result.success, false, command .. ': success')
    local in_buffer, in_notes = count()
    equal({ in_buffer, in_notes }, { 1, 1 }, command .. ': lines carrying the error (buffer, messages)\n' .. text())
    equal(notes[1].level, vim.log.levels.WARN, command .. ': shown as a warning')
  end
  -- A failure with output of its own: the output, then the error once.
  use(process_agent('p', 'echo partial; echo broke >&2; exit 3'))
  vim.cmd('OmaAsk go')
  equal(finished().result.success, false, 'the process failed')
  equal(vim.list_slice(lines(), 5), { 'partial', '[error] sh exited with code 3: broke', '' }, 'reply')
end }

tests[#tests + 1] = { ':OmaAgent switches the agent of the next ask; without a name it offers the list', function()
  local a = echo_agent('a')
  local b = process_agent('b', 'echo from b')
  use(nil, { agents = { a, b } })
  vim.cmd('OmaChat first')
  local first = finished()
  equal({ first.agent, first.outcome }, { 'a', 'done' }, 'agents without agent: the first is asked')
  equal(vim.fn.getcompletion('OmaAgent ', 'cmdline'), { 'a', 'b' }, 'names complete')
  vim.cmd('OmaAgent b')
  vim.cmd('OmaAsk hello')
  local second = finished()
  equal({ second.agent, second.result.output }, { 'b', 'from b\n' }, 'after :OmaAgent b')
  equal(notes[1], { message = 'oma: asking b (process: sh)', level = vim.log.levels.INFO }, 'said')

  local offered, prompt, shown = nil, nil, nil
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    offered, prompt = items, opts.prompt
    shown = vim.tbl_map(opts.format_item, items)
    on_choice('a', 1)
  end
  local ok, err = pcall(vim.cmd, 'OmaAgent')
  vim.ui.select = select
  check(ok, tostring(err))
  equal(offered, { 'a', 'b' }, 'vim.ui.select items')
  equal(prompt, 'Agent to ask:', 'prompt')
  equal(shown, { 'a (test echo)', 'b (process: sh) [current]' }, 'how the items are shown')
  vim.cmd('OmaChat second')
  local third = finished()
  equal(third.agent, 'a', 'after picking a')
  equal(#vim.json.decode(third.result.output).messages, 3, "back on a: a's conversation goes on")

  notes = {}
  vim.cmd('OmaAgent nobody')
  equal(notes, { {
    message = "oma: no agent called 'nobody'; the agents are: a, b",
    level = vim.log.levels.ERROR,
  } }, 'an unknown name')
  equal(oma.config.agent.name, 'a', 'the agent is unchanged')

  use(nil, { agents = { a, b }, agent = 'b' })
  equal(oma.config.agent, b, 'setup{agent = name} picks one of agents')
  local bad = {
    [{ agent = 'nobody' }] = "oma.setup: agent 'nobody' is not one of agents (a, b)",
    [{ agnet = a }] = "oma.setup: unknown option 'agnet' (see :help oma-options)",
    [{ agents = { a, a } }] = "oma.setup: two agents are called 'a'",
    [{ agents = { { model = 'x' } } }] = 'oma.setup: agents[1].name must be a string',
    [{ open = 'float' }] = 'oma.setup: open must be one of vsplit, split, tab, none',
  }
  for opts, expected in pairs(bad) do
    local done, why = pcall(oma.setup, opts)
    equal({ done, why }, { false, expected }, 'setup' .. vim.inspect(opts))
  end
  equal(oma.config.agent, b, 'a refused setup changes nothing')
  use(echo_agent(), { agents = {} })
  equal(oma.agent_names(), { 'echo' }, 'without agents, the one agent is offered')
end }

tests[#tests + 1] = { ":OmaModels lists the provider's models and switches the agent's model", function()
  -- The fixture answers its first request 401, then lists sim-small and
  -- sim-large, and prints `posted model NAME` for each POST.
  local url, posted = nil, {}
  local script = root .. '/tests/editors/fixtures/models_simulator.py'
  local job = vim.fn.jobstart({ python, script }, {
    cwd = root,
    on_stdout = function(_, data)
      for _, line in ipairs(data) do
        url = url or line:match('listening on (http://%S+)')
        posted[#posted + 1] = line:match('^posted model (%S+)')
      end
    end,
  })
  check(job > 0, 'simulator started')
  local select = vim.ui.select
  local ok, err = pcall(function()
    wait_for('the simulator', function()
      return url ~= nil
    end)
    local key_env = 'OMA_NVIM_MODELS_TEST_KEY'
    use({ name = 'claude', provider = 'anthropic', model = 'sim-small', baseURL = url, apiKeyEnv = key_env },
      { cmd_env = { [key_env] = 'sk-nvim-models-7e2f' } })
    local offered, shown, prompt = nil, nil, nil
    vim.ui.select = function(items, opts, on_choice)
      offered, prompt = items, opts.prompt
      shown = vim.tbl_map(opts.format_item, items)
      on_choice('sim-large', 2)
    end
    local function pick()
      local answer = nil
      oma.pick_model(function(e, model)
        answer = { err = e, model = model }
      end)
      wait_for('the model pick', function()
        return answer ~= nil
      end)
      return answer
    end

    local refused = pick()
    contains(tostring(refused.err), 'error -32003 ProviderError: ', 'the 401 as the host says it')
    contains(refused.err, 'invalid x-api-key', 'the provider message')
    check(not refused.err:find('sk-nvim-models', 1, true), 'no key in the message')
    equal(notes[#notes], { message = 'oma: ' .. refused.err, level = vim.log.levels.ERROR }, 'shown')
    equal(offered, nil, 'nothing offered')

    vim.cmd('OmaChat first question')
    equal(finished().outcome, 'done', 'first turn')
    local chosen = pick() -- the failure was not kept: the host asks the provider again
    equal(chosen, { model = 'sim-large' }, 'picked')
    equal(offered, { 'sim-small', 'sim-large' }, 'the provider list, in its order')
    equal(prompt, 'Model for claude:', 'prompt')
    equal(shown, { 'sim-small (Sim Small) [current]', 'sim-large (Sim Large)' }, 'how the models are shown')
    equal(oma.config.agent.model, 'sim-large', 'the agent model')
    equal(notes[#notes], { message = 'oma: claude uses sim-large from now on', level = vim.log.levels.INFO }, 'said')

    vim.cmd('OmaChat second question')
    local second = finished()
    equal(second.outcome, 'done', 'second turn')
    contains(second.result.output, 'simulator saw 3 message(s)', 'the conversation went on')
    wait_for('the posts', function()
      return #posted == 2
    end)
    equal(posted, { 'sim-small', 'sim-large' }, 'the models sent to the provider')

    use(process_agent('p', 'cat'))
    local external = pick()
    equal(external.err, 'p is an external agent (backend: process): it has no provider model list', 'external')
  end)
  vim.ui.select = select
  vim.fn.jobstop(job)
  if not ok then
    error(err, 0)
  end
end }

-- -- the events shown as lines of their own ----------------------------------------

tests[#tests + 1] = { 'the reply renders each event kind as the VS Code extension does', function()
  -- The cases and renderings editors/vscode/test/units.test.ts checks too.
  local fixture = table.concat(vim.fn.readfile(root .. '/tests/editors/fixtures/reply_events.json'), '\n')
  for _, case in ipairs(vim.json.decode(fixture).cases) do
    vim.api.nvim_buf_set_lines(reply.buffer(), 0, -1, false, {})
    local run = { text = '', errors_shown = {} }
    run.place = reply.section(reply.buffer(), 'ask', 'fixture', 'q')
    for _, event in ipairs(case.events) do
      reply.event(run, event)
    end
    local rendered = table.concat(vim.list_slice(lines(), 5), '\n')
    equal(rendered, case.rendered, case.name)
    equal(run.text, case.text, case.name .. ': the reply text')
  end
end }

--- Run `body(url)` with tests/editors/fixtures/events_simulator.py serving `args`; stopped after it.
local function with_events_simulator(args, body)
  local script = root .. '/tests/editors/fixtures/events_simulator.py'
  with_simulator(vim.list_extend({ python, script }, args), body)
end

local function simulated(name, url, extra)
  local agent = { name = name, provider = 'anthropic', model = 'sim-1', baseURL = url, apiKey = 'sk-test' }
  return vim.tbl_extend('error', agent, extra or {})
end

--- The reply's lines from the first one equal to `first` on (nil: not there).
local function lines_from(first)
  local all = lines()
  for index, line in ipairs(all) do
    if line == first then
      return vim.list_slice(all, index)
    end
  end
  return nil
end

tests[#tests + 1] = { "a shell command's output shows as it ran, before the call's short result", function()
  with_events_simulator({ 'shell' }, function(url)
    local permissions = { { tool = 'shell', action = 'allow' } }
    use(simulated('runner', url, { tools = { 'shell' }, permissions = permissions }))
    vim.cmd('OmaAsk run the command')
    equal(finished().outcome, 'done', 'outcome')
    local command = "printf 'first\\n'; sleep 0.3; printf 'second\\n'"
    equal(lines_from('[permission] shell ' .. command .. ': allow'), {
      '[permission] shell ' .. command .. ': allow',
      '[shell output]', 'first', 'second',
      '[tool result] [exit code 0]',
      'ran it', '',
    }, 'reply buffer')
    equal(oma.status().last.text, 'ran it', 'the output is not the reply text')
  end)
end }

tests[#tests + 1] = { "a delegate's events show under its name, between the call and its result", function()
  with_events_simulator({ 'delegate' }, function(url)
    local reviewer = process_agent('reviewer', 'echo looks fine')
    local lead = simulated('lead', url, {
      delegates = { 'reviewer' },
      permissions = { { tool = 'delegate', action = 'allow' } },
    })
    -- The lead is asked first: the reviewer, never used, is created before it.
    use(nil, { agents = { reviewer, lead }, agent = 'lead' })
    vim.cmd('OmaAsk have it reviewed')
    local run = finished()
    equal({ run.agent, run.outcome }, { 'lead', 'done' }, 'the lead run')
    equal(lines_from('[permission] delegate reviewer: allow'), {
      '[permission] delegate reviewer: allow',
      '[reviewer] looks fine',
      '[tool result] looks fine',
      'the reviewer agrees', '',
    }, 'reply buffer')
    equal(run.text, 'the reviewer agrees', "the delegate's text is not the lead's reply")
    equal(agent_names(), { 'reviewer', 'lead' }, 'the reviewer was created first')
    -- Both known with the same config: asking for the lead again creates neither.
    local ensured
    require('oma.agents').ensure(oma.config, lead, function(err, agent_id)
      ensured = { err = err, id = agent_id }
    end)
    equal(ensured, { id = require('oma.agents').id(lead) }, 'the known agentId, answered at once')
    equal(agent_names(), { 'reviewer', 'lead' }, 'nothing created again')
  end)
end }

tests[#tests + 1] = { "delegates' own delegates come first; a cycle or an unknown name is the host's to refuse", function()
  local bottom = echo_agent('bottom')
  local middle = vim.tbl_extend('force', echo_agent('middle'), { delegates = { 'bottom' } })
  local top = vim.tbl_extend('force', echo_agent('top'), { delegates = { 'middle', 'bottom' } })
  local ping = vim.tbl_extend('force', echo_agent('ping'), { delegates = { 'pong' } })
  local pong = vim.tbl_extend('force', echo_agent('pong'), { delegates = { 'ping' } })
  local loner = vim.tbl_extend('force', echo_agent('loner'), { delegates = { 'nobody' } })
  use(nil, { agents = { bottom, middle, top, ping, pong, loner }, agent = 'top' })
  vim.cmd('OmaAsk hello')
  equal(finished().outcome, 'done', 'top answers')
  equal(agent_names(), { 'bottom', 'middle', 'top' }, 'created deepest first')
  -- ping creates pong first, which names ping, not created yet: pong's refusal is ping's answer.
  vim.cmd('OmaAgent ping')
  vim.cmd('OmaAsk hello')
  local run = finished()
  equal(run.outcome, 'error', 'the cycle')
  contains(run.error, "delegates[0]: no agent named 'ping' on this connection", 'the error')
  vim.cmd('OmaAgent loner')
  vim.cmd('OmaAsk hello')
  run = finished()
  equal(run.outcome, 'error', 'the unknown name')
  contains(run.error, "delegates[0]: no agent named 'nobody' on this connection", 'the error')
  equal(agent_names(), { 'bottom', 'middle', 'top' }, 'none of those exists')
end }

tests[#tests + 1] = { 'a model fallback is one line saying which model failed, why, and which goes on', function()
  with_events_simulator({ 'fallback' }, function(url)
    use(simulated('busy', url, { fallbackModels = { 'sim-2' } }))
    vim.cmd('OmaAsk hello')
    equal(finished().outcome, 'done', 'outcome')
    equal(vim.list_slice(lines(), 5), {
      '[model fallback] sim-1 failed with HTTP 529 (anthropic: Overloaded (overloaded_error)); going on with sim-2',
      'from the fallback', '',
    }, 'reply buffer')
  end)
end }

tests[#tests + 1] = { 'a compaction is one line: strategy, trigger, messages and tokens before and after', function()
  local notes = tmp .. '/notes'
  vim.fn.mkdir(notes, 'p')
  with_events_simulator({ 'compaction', notes }, function(url)
    use(simulated('reader', url, { tools = { 'file_read' }, cwd = notes, contextWindow = 2500, maxTokens = 200 }))
    vim.cmd('OmaAsk read the notes')
    equal(finished().outcome, 'done', 'outcome')
    local shown = vim.tbl_filter(function(line)
      return vim.startswith(line, '[compaction]')
    end, lines())
    check(#shown >= 1, 'a compaction line in\n' .. text())
    for _, line in ipairs(shown) do
      local before, after, tokens_before, tokens_after =
        line:match('^%[compaction%] summarize %(threshold%): (%d+) %-> (%d+) messages, (%d+) %-> (%d+) tokens$')
      check(before ~= nil, 'the compaction line: ' .. line)
      check(tonumber(after) < tonumber(before), line)
      check(tonumber(tokens_after) < tonumber(tokens_before), line)
    end
    local all = lines()
    equal(all[#all - 1], 'read them all', 'the reply goes on after it')
  end)
end }

tests[#tests + 1] = { ':help oma covers the setup, every command, option and Lua function', function()
  local runtime = tmp .. '/runtime'
  vim.fn.mkdir(runtime .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(root .. '/editors/nvim/doc/oma.txt'), runtime .. '/doc/oma.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(runtime .. '/doc'))
  check(vim.fn.filereadable(runtime .. '/doc/tags') == 1, 'helptags wrote doc/tags')
  vim.opt.runtimepath:prepend(runtime)
  local function lands(tag)
    local ok, err = pcall(vim.cmd, 'help ' .. tag)
    check(ok, ':help ' .. tag .. ': ' .. tostring(err))
    equal(vim.fn.expand('%:t'), 'oma.txt', ':help ' .. tag .. ' opens')
    contains(vim.api.nvim_get_current_line(), '*' .. tag .. '*', ':help ' .. tag .. ' lands on its tag')
  end
  lands('oma')
  lands('oma-setup')
  for name in pairs(vim.api.nvim_get_commands({})) do
    if name:match('^Oma') then
      lands(':' .. name)
    end
  end
  for option in pairs(require('oma.options').types) do
    lands('oma-option-' .. option)
  end
  local doc = table.concat(vim.fn.readfile(runtime .. '/doc/oma.txt'), '\n')
  for name, value in pairs(oma) do
    if type(value) == 'function' then
      contains(doc, '\n' .. name .. '(', 'the Lua function ' .. name .. ' in oma.txt')
    end
  end
  vim.cmd('helpclose')
end }

tests[#tests + 1] = { ':help oma names only commands and tools that exist', function()
  local doc = table.concat(vim.fn.readfile(root .. '/editors/nvim/doc/oma.txt'), '\n')
  local commands = vim.api.nvim_get_commands({})
  for name in doc:gmatch(':(Oma%w+)') do
    check(commands[name] ~= nil, ':help oma names :' .. name .. ', which is not a command')
  end
  -- The tools: the `[tool NAME] {input}` examples (not the `[tool result]`
  -- lines) and every `snake_case` word that is not an option, a Lua function
  -- or the selection's `file_name`.
  local not_tools = { file_name = true }
  for option in pairs(require('oma.options').types) do
    not_tools[option] = true
  end
  for name, value in pairs(oma) do
    if type(value) == 'function' then
      not_tools[name] = true
    end
  end
  local named = {}
  for name in doc:gmatch('%[tool ([%w_]+)%] {') do
    named[name] = true
  end
  for name in doc:gmatch('`([%l]+_[%l_]+)`') do
    if not not_tools[name] then
      named[name] = true
    end
  end
  check(named.file_edit, 'file_edit is among the names found: ' .. vim.inspect(named))
  use(echo_agent())
  local function accepted(tool)
    local answer = nil
    local config = { name = 'tools-' .. tool, provider = 'test', model = 'echo', tools = { tool } }
    require('oma.client').request(oma.config, 'agent/create', { config = config }, function(err, result)
      answer = { err = err, result = result }
    end)
    wait_for('agent/create with ' .. tool, function()
      return answer ~= nil
    end)
    if answer.result then
      require('oma.client').request(oma.config, 'agent/dispose', { agentId = answer.result.agentId }, function() end)
    end
    return answer.err == nil, answer.err
  end
  check(not accepted('read_file'), 'the host refuses a tool it does not have')
  for name in pairs(named) do
    local ok, err = accepted(name)
    check(ok, ':help oma names the tool ' .. name .. ', which the host refuses: ' .. oma.describe_error(err))
  end
end }

tests[#tests + 1] = { 'base64 matches coreutils for every tail length', function()
  local base64 = require('oma.input').base64
  for _, sample in ipairs({ '', 'a', 'ab', 'abc', 'abcd', '\0\255\128' }) do
    local path = tmp .. '/sample'
    local file = io.open(path, 'wb')
    file:write(sample)
    file:close()
    equal(base64(sample), vim.fn.system({ 'base64', '-w0', path }), 'base64 of ' .. vim.inspect(sample))
  end
end }

-- -- runner ---------------------------------------------------------------------------

local passed, failed = 0, 0
for index, case in ipairs(tests) do
  local ok, err = xpcall(case[2], debug.traceback)
  if ok then
    passed = passed + 1
    out(string.format('ok %d - %s', index, case[1]))
  else
    failed = failed + 1
    out(string.format('not ok %d - %s\n%s', index, case[1], tostring(err)))
    oma.cancel()
  end
end
out(string.format('%d passed, %d failed', passed, failed))
oma.stop()
vim.wait(2000, function()
  return #vim.lsp.get_active_clients() == 0
end, 20)
vim.cmd(failed == 0 and 'qall!' or 'cquit 1')
