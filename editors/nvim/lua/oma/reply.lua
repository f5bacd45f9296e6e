-- The reply buffer: a scratch buffer (`oma://reply`) that asks and their
-- streamed replies are appended to, and the rendering of StreamEvents,
-- results, cancellations and errors into it.
--
-- Each ask gets a heading at the end of the buffer and a place of its own: an
-- extmark just after the text it has written so far. Its reply is written
-- there, not at the end of the buffer, so runs that stream at the same time
-- (an :OmaAsk on a slow agent, then an :OmaChat with another) each keep their
-- text under their own heading. Text deltas are written as they arrive, and
-- so is a running tool call's output (under one marker line per call);
-- reasoning, tool calls, tool results, permission decisions, model fallbacks,
-- compactions and errors become short bracketed lines (worded in
-- oma.event_lines). A delegate's events are rendered the same way, each of
-- its lines starting with its name (`[reviewer] `, `[reviewer > linter] ` for
-- its own delegate).

local wording = require('oma.event_lines')

local M = {}

local NAME = 'oma://reply'
local NAMESPACE = vim.api.nvim_create_namespace('oma-reply')

local function scratch(name, filetype)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_option(buf, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(buf, 'bufhidden', 'hide')
  vim.api.nvim_buf_set_option(buf, 'swapfile', false)
  vim.api.nvim_buf_set_option(buf, 'filetype', filetype)
  return buf
end

--- The reply buffer, created on first use.
function M.buffer()
  return scratch(NAME, 'markdown')
end

--- Show `buf` in a window unless one shows it already (`open`: vsplit, split, tab, none).
function M.show(buf, open)
  if open == 'none' or vim.fn.bufwinid(buf) ~= -1 then
    return
  end
  local current = vim.api.nvim_get_current_win()
  if open == 'tab' then
    vim.cmd('tab sbuffer ' .. buf)
  elseif open == 'split' then
    vim.cmd('sbuffer ' .. buf)
  else
    vim.cmd('vertical sbuffer ' .. buf)
  end
  vim.api.nvim_set_current_win(current)
end

local function last_line(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  return vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or '', count
end

--- Insert `text` (it may hold newlines) at `row`, `col` of `buf`; returns the
--- position just after it. Windows showing `buf` follow to its last line.
local function insert(buf, row, col, text)
  local parts = vim.split(text, '\n', { plain = true })
  vim.api.nvim_buf_set_text(buf, row, col, row, col, parts)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
  if #parts == 1 then
    return row, col + #parts[1]
  end
  return row + #parts - 1, #parts[#parts]
end

--- A mark at `row`, `col` that stays put when text is inserted right at it
--- (left gravity): a heading appended where a run's text ends leaves that
--- run's place before the heading. A run moves its own mark past what it writes.
local function mark(buf, row, col, id)
  return vim.api.nvim_buf_set_extmark(buf, NAMESPACE, row, col, { id = id, right_gravity = false })
end

local function end_of(buf)
  local line, count = last_line(buf)
  return count - 1, #line
end

--- Where `run`'s next text goes: its buffer, row and column (0-based). A run
--- whose buffer was wiped goes on at the end of a new reply buffer.
local function position(run)
  local place = run.place
  if place and vim.api.nvim_buf_is_valid(place.buf) then
    local at = vim.api.nvim_buf_get_extmark_by_id(place.buf, NAMESPACE, place.mark, {})
    if at[1] ~= nil then
      return place.buf, at[1], at[2]
    end
  end
  local buf = M.buffer()
  local row, col = end_of(buf)
  run.place = { buf = buf, mark = mark(buf, row, col) }
  return buf, row, col
end

--- The text of `run`'s current line up to its place.
local function line_before(run)
  local buf, row, col = position(run)
  return vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]:sub(1, col)
end

--- Write `text` at `run`'s place, moving the place past it.
local function write(run, text)
  if text == nil or text == '' then
    return
  end
  local buf, row, col = position(run)
  local end_row, end_col = insert(buf, row, col, text)
  mark(buf, end_row, end_col, run.place.mark)
end

--- Write `chunk` at `run`'s place as `voice`'s `kind` of text (`voice`: a
--- delegate's prefix, '' for the run's own). It goes on the open line only
--- when that line is the same voice's same kind; otherwise it starts a line.
--- Every line a delegate's voice starts begins with its prefix.
local function put(run, voice, kind, chunk)
  if chunk == nil or chunk == '' then
    return
  end
  run.output_shown = nil
  local at_start = line_before(run) == ''
  local open = run.open
  local out = {}
  if not at_start and not (open and open.voice == voice and open.kind == kind) then
    out[1] = '\n'
    at_start = true
  end
  for index, part in ipairs(vim.split(chunk, '\n', { plain = true })) do
    if index > 1 then
      out[#out + 1] = '\n'
    end
    if part ~= '' and (at_start or index > 1) then
      out[#out + 1] = voice
    end
    out[#out + 1] = part
  end
  run.open = chunk:sub(-1) ~= '\n' and { voice = voice, kind = kind } or nil
  write(run, table.concat(out))
end

--- `line` on a line of its own at `run`'s place.
local function write_line(run, line, voice)
  put(run, voice or '', 'line', line .. '\n')
end

--- End `run`'s open line, if it has one.
local function end_line(run)
  if line_before(run) ~= '' then
    write(run, '\n')
  end
  run.open = nil
end

--- The run is over: its place is no longer needed.
local function release(run)
  local place = run.place
  if place and vim.api.nvim_buf_is_valid(place.buf) then
    vim.api.nvim_buf_del_extmark(place.buf, NAMESPACE, place.mark)
  end
  run.place = nil
end

local function describe_block(block)
  if block.type == 'text' then
    return block.text
  elseif block.type == 'image' then
    local source = block.source or {}
    return string.format('[image %s, %d base64 chars]', tostring(source.media_type), #(source.data or ''))
  end
  return '[' .. tostring(block.type) .. ']'
end

--- The heading above a reply, at the end of `buf`: `## kind · agent`, then
--- the question quoted. Returns the place the reply goes (`run.place`).
function M.section(buf, kind, agent_name, blocks)
  local lines = {}
  if type(blocks) == 'string' then
    blocks = { { type = 'text', text = blocks } }
  end
  for _, block in ipairs(blocks) do
    for _, line in ipairs(vim.split(describe_block(block), '\n', { plain = true })) do
      lines[#lines + 1] = '> ' .. line
    end
  end
  local line, count = last_line(buf)
  local heading = string.format('## %s · %s\n\n%s\n\n', kind, agent_name, table.concat(lines, '\n'))
  if not (count == 1 and line == '') then
    heading = (line == '' and '\n' or '\n\n') .. heading
  end
  local row, col = insert(buf, count - 1, #line, heading)
  return { buf = buf, mark = mark(buf, row, col) }
end

local function add_streamed(run, call, text)
  run.streamed[call] = (run.streamed[call] or '') .. text
end

--- A running call's output: its text as it comes under the call's marker, or the terminal showing it.
local function output(run, voice, data)
  local call = voice .. tostring(data.toolUseId)
  local tool = run.tools[call] or 'tool'
  if type(data.text) == 'string' then
    if run.output_shown ~= call then
      write_line(run, wording.output_marker(tool), voice)
    end
    put(run, voice, 'output ' .. call, data.text)
    add_streamed(run, call, data.text)
    run.output_shown = call
  elseif data.terminalId ~= nil then
    write_line(run, wording.terminal(tool, data.terminalId), voice)
  end
end

--- Render `event` of the run (`agents` empty) or of the delegate that chain of delegations reached.
local function render(run, agents, event)
  local voice = wording.voice_prefix(agents)
  local data = type(event.data) == 'table' and event.data or {}
  local kind = event.type
  if kind == 'text' and type(event.data) == 'string' then
    if #agents == 0 then
      run.text = run.text .. event.data
    end
    put(run, voice, 'text', event.data)
  elseif kind == 'reasoning' and type(event.data) == 'string' then
    local going = run.open and run.open.voice == voice and run.open.kind == 'reasoning'
    put(run, voice, 'reasoning', (going and '' or '[reasoning] ') .. event.data)
  elseif kind == 'tool_use' then
    run.tools[voice .. tostring(data.id)] = tostring(data.name)
    write_line(run, wording.tool_use(data), voice)
  elseif kind == 'tool_output' then
    output(run, voice, data)
  elseif kind == 'tool_result' then
    write_line(run, wording.tool_result(data, run.streamed[voice .. tostring(data.tool_use_id)]), voice)
  elseif kind == 'permission' then
    write_line(run, wording.permission(data), voice)
  elseif kind == 'delegate' and type(data.agent) == 'string' and type(data.event) == 'table' then
    local nested = data.event
    if nested.type == 'text' and type(nested.data) == 'string' then
      -- The delegate's text is the call's output: its result need not repeat it.
      add_streamed(run, voice .. tostring(data.toolUseId), nested.data)
    end
    local chain = vim.list_extend(vim.deepcopy(agents), { data.agent })
    render(run, chain, nested)
  elseif kind == 'model_fallback' then
    write_line(run, wording.model_fallback(data), voice)
  elseif kind == 'compaction' then
    write_line(run, wording.compaction(data), voice)
  elseif kind == 'error' then
    local message = tostring(data.message)
    if #agents == 0 then
      run.errors_shown[message] = true
    end
    write_line(run, wording.error(message), voice)
  end
  -- acp_update, plan and unknown kinds are not shown.
end

--- Render one StreamEvent at `run`'s place.
function M.event(run, event)
  run.streamed = run.streamed or {} -- the output each call streamed, by voice prefix .. call id
  run.tools = run.tools or {} -- each call's tool name, by voice prefix .. call id
  render(run, {}, event)
end

--- The run's result arrived: the output if nothing streamed, then the status if not ok.
--- A failed run's output and status often repeat an error already streamed
--- (a missing API key says so in all three): each error is shown once.
function M.finish(run, result)
  local status = result.status or {}
  local failed = status.code ~= 'ok'
  local shown = run.errors_shown
  local output_text = result.output
  local repeats = failed and (output_text == status.message or shown[output_text])
  if run.text == '' and type(output_text) == 'string' and output_text ~= '' and not repeats then
    run.text = output_text
    put(run, '', 'text', output_text)
  end
  if failed and not (status.message and shown[status.message]) then
    local message = status.message and (': ' .. status.message) or ''
    write_line(run, '[' .. tostring(status.code) .. message .. ']')
  else
    end_line(run)
  end
  release(run)
end

--- The run was cancelled: the text it had, if none streamed, then `[cancelled]`.
function M.cancelled(run, partial)
  if run.text == '' and partial and type(partial.output) == 'string' then
    run.text = partial.output
    put(run, '', 'text', partial.output)
  end
  write_line(run, '[cancelled]')
  release(run)
end

--- The run ended with a JSON-RPC error (or the host went away): `[message]`.
function M.error(run, message)
  write_line(run, '[' .. message .. ']')
  release(run)
end

--- A history buffer (`oma://history`) holding `messages`, shown per `open`.
function M.history(agent_name, messages, open)
  local buf = scratch('oma://history', 'markdown')
  local lines = { '# History of ' .. agent_name, '' }
  if #messages == 0 then
    lines[#lines + 1] = '(empty: no conversation turns yet)'
  end
  for index, message in ipairs(messages) do
    lines[#lines + 1] = string.format('## %d. %s', index, message.role)
    lines[#lines + 1] = ''
    for _, block in ipairs(message.content or {}) do
      for _, line in ipairs(vim.split(describe_block(block), '\n', { plain = true })) do
        lines[#lines + 1] = line
      end
    end
    lines[#lines + 1] = ''
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  M.show(buf, open)
  return buf
end

return M
