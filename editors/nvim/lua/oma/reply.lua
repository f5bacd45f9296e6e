-- The reply buffer: a scratch buffer (`oma://reply`) that asks and their
-- streamed replies are appended to, and the rendering of StreamEvents,
-- results, cancellations and errors into it.
--
-- Text deltas are appended as they arrive; reasoning, tool calls, tool results,
-- permission decisions and errors become short bracketed lines.

local M = {}

local NAME = 'oma://reply'
local PREVIEW = 200

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

--- Append `text` at the end of `buf` (it may hold newlines); follows it in open windows.
function M.append(buf, text)
  if text == nil or text == '' then
    return
  end
  local line, count = last_line(buf)
  local parts = vim.split(text, '\n', { plain = true })
  parts[1] = line .. parts[1]
  vim.api.nvim_buf_set_lines(buf, count - 1, count, false, parts)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

--- Append `line` on a line of its own.
function M.line(buf, line)
  local current = last_line(buf)
  M.append(buf, (current == '' and '' or '\n') .. line .. '\n')
end

local function preview(value)
  local text = type(value) == 'string' and value or vim.json.encode(value)
  text = text:gsub('%s+', ' ')
  if #text > PREVIEW then
    text = text:sub(1, PREVIEW - 3) .. '...'
  end
  return text
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

--- The heading above a reply: `## kind · agent`, then the question quoted.
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
  if count == 1 and line == '' then
    M.append(buf, heading)
  else
    M.append(buf, (line == '' and '\n' or '\n\n') .. heading)
  end
end

--- Render one StreamEvent of `run` into `buf`.
function M.event(buf, run, event)
  local data = event.data
  if event.type == 'reasoning' and type(data) == 'string' then
    if not run.in_reasoning then
      data = (last_line(buf) == '' and '' or '\n') .. '[reasoning] ' .. data
    end
    run.in_reasoning = true
    M.append(buf, data)
    return
  end
  if run.in_reasoning then
    run.in_reasoning = false
    M.append(buf, '\n')
  end
  local field = function(name)
    return type(data) == 'table' and data[name] or nil
  end
  if event.type == 'text' and type(data) == 'string' then
    run.text = run.text .. data
    M.append(buf, data)
  elseif event.type == 'tool_use' then
    M.line(buf, string.format('[tool %s] %s', tostring(field('name')), preview(field('input'))))
  elseif event.type == 'tool_result' then
    local label = field('is_error') == true and 'tool error' or 'tool result'
    M.line(buf, string.format('[%s] %s', label, preview(field('content'))))
  elseif event.type == 'permission' then
    M.line(buf, string.format('[permission] %s: %s', tostring(field('title')), tostring(field('decision'))))
  elseif event.type == 'error' then
    local message = tostring(field('message'))
    run.errors_shown[message] = true
    M.line(buf, '[error] ' .. message)
  end
  -- acp_update and unknown kinds are not shown.
end

--- The run's result arrived: the output if nothing streamed, then the status if not ok.
--- A failed run's output and status often repeat an error already streamed
--- (a missing API key says so in all three): each error is shown once.
function M.finish(buf, run, result)
  if run.in_reasoning then
    run.in_reasoning = false
    M.append(buf, '\n')
  end
  local status = result.status or {}
  local failed = status.code ~= 'ok'
  local shown = run.errors_shown
  local output = result.output
  local repeats = failed and (output == status.message or shown[output])
  if run.text == '' and type(output) == 'string' and output ~= '' and not repeats then
    run.text = output
    M.append(buf, output)
  end
  if failed and not (status.message and shown[status.message]) then
    local message = status.message and (': ' .. status.message) or ''
    M.line(buf, '[' .. tostring(status.code) .. message .. ']')
  elseif last_line(buf) ~= '' then
    M.append(buf, '\n')
  end
end

function M.cancelled(buf, run, partial)
  if run.text == '' and partial and type(partial.output) == 'string' then
    run.text = partial.output
    M.append(buf, partial.output)
  end
  M.line(buf, '[cancelled]')
end

function M.error(buf, message)
  M.line(buf, '[' .. message .. ']')
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
