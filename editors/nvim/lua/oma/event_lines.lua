-- The wording of the reply buffer's bracketed lines: one function per
-- StreamEvent kind the reply shows as a line, each returning the line
-- without its newline, and the prefix that marks a delegate's lines.
--
-- The VS Code extension words them the same (editors/vscode/src/core/eventLines.ts);
-- tests/editors/fixtures/reply_events.json holds the renderings both editors'
-- tests check.

local M = {}

local PREVIEW = 200

--- `value` (JSON unless a string) on one line, whitespace runs made one space, cut to PREVIEW.
function M.preview(value)
  local text = type(value) == 'string' and value or vim.json.encode(value)
  text = vim.trim((text:gsub('%s+', ' ')))
  if #text > PREVIEW then
    text = text:sub(1, PREVIEW - 3) .. '...'
  end
  return text
end

--- What starts each line of a delegate (`agents`: the delegation chain, outermost first); '' for the run's own.
function M.voice_prefix(agents)
  if #agents == 0 then
    return ''
  end
  return '[' .. table.concat(agents, ' > ') .. '] '
end

function M.tool_use(data)
  return string.format('[tool %s] %s', tostring(data.name), M.preview(data.input))
end

--- Above a tool call's streamed output (`tool`: the call's tool name).
function M.output_marker(tool)
  return '[' .. tool .. ' output]'
end

--- A tool call whose output the editor's terminal shows instead.
function M.terminal(tool, terminal_id)
  return string.format('[%s output in terminal %s]', tool, tostring(terminal_id))
end

--- The lines of a result that were not streamed (the shell's `[exit code N:
--- ...]` or `[ended by SIGx]`, a timeout's explanation, a cut), else its last
--- line. The reader watched the output arrive: repeating it, even as a
--- preview, would bury the line that says how the call ended.
function M.beyond_streamed(content, streamed)
  local seen = {}
  for _, line in ipairs(vim.split(streamed, '\n', { plain = true })) do
    seen[line] = true
  end
  local lines, rest = {}, {}
  for _, line in ipairs(vim.split(content, '\n', { plain = true })) do
    if vim.trim(line) ~= '' then
      lines[#lines + 1] = line
      if not seen[line] then
        rest[#rest + 1] = line
      end
    end
  end
  if #rest == 0 then
    rest = { lines[#lines] }
  end
  return table.concat(rest, '\n')
end

--- A tool call's result. `streamed`: the output this call streamed into the
--- reply already, if any; the result then shows only what it says beyond it.
function M.tool_result(data, streamed)
  local label = data.is_error == true and 'tool error' or 'tool result'
  local content = data.content
  if streamed ~= nil and type(content) == 'string' then
    content = M.beyond_streamed(content, streamed)
  end
  return string.format('[%s] %s', label, M.preview(content))
end

--- An ACP agent's decision names its title; an LLM agent's names the tool and its target.
function M.permission(data)
  local what = data.title
  if type(what) ~= 'string' then
    local target = (data.target == nil or data.target == vim.NIL) and '' or (' ' .. M.preview(data.target))
    what = tostring(data.tool) .. target
  end
  return string.format('[permission] %s: %s', what, tostring(data.decision))
end

function M.error(message)
  return '[error] ' .. message
end

function M.model_fallback(data)
  return string.format('[model fallback] %s failed with HTTP %s (%s); going on with %s', tostring(data.failed),
    tostring(data.status), M.preview(data.message), tostring(data.model))
end

--- `images` lists the media of the compacted turns: a summary names them, a sliding window drops them.
function M.compaction(data)
  local media = type(data.images) == 'table' and #data.images or 0
  local not_kept = media > 0 and string.format(', %d image(s) or file(s) not kept', media) or ''
  return string.format('[compaction] %s (%s): %s -> %s messages, %s -> %s tokens%s', tostring(data.strategy),
    tostring(data.trigger), tostring(data.before), tostring(data.after), tostring(data.tokensBefore),
    tostring(data.tokensAfter), not_kept)
end

return M
