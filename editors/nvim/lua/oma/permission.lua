-- Permission requests: the host sends `agent/requestPermission {agentName,
-- title, kind, optionKinds, source, tool?}` when an ACP agent with
-- `permission: "ask-client"` asks (`source = 'acp'`), or when an LLM agent's
-- permission rule says `ask` for a tool call (`source = 'tool'`, with `tool =
-- {name, input, target}`). The answer is `{approve = bool, scope = 'once' |
-- 'session'}`: "Always this session" (`scope = 'session'`) lets the same tool
-- run for the rest of the agent's life without asking again (for an ACP agent
-- it picks its allow_always option). Only the decisions offered are offered to
-- the person; dismissing the question denies.

local M = {}

--- The question for a request: {message, choices = {{label, approve, scope}}}.
function M.prompt(request)
  local kinds = type(request.optionKinds) == 'table' and request.optionKinds or {}
  local function offered(kind)
    return vim.tbl_contains(kinds, kind)
  end
  local choices = {}
  if offered('allow_once') or offered('allow_always') then
    choices[#choices + 1] = { label = '&Allow once', approve = true, scope = 'once' }
  end
  if offered('allow_always') then
    choices[#choices + 1] = { label = 'Always this &session', approve = true, scope = 'session' }
  end
  if offered('reject_once') or offered('reject_always') then
    choices[#choices + 1] = { label = '&Deny', approve = false }
  end
  local kind = type(request.kind) == 'string' and (' (' .. request.kind .. ')') or ''
  return {
    message = string.format(
      'Agent "%s" asks permission: %s%s',
      tostring(request.agentName),
      tostring(request.title),
      kind
    ),
    choices = choices,
  }
end

--- Ask with vim.fn.confirm (a modal question); returns approve and scope.
function M.confirm(request)
  local prompt = M.prompt(request)
  if #prompt.choices == 0 then
    return false
  end
  local labels = {}
  local default = 1
  for index, choice in ipairs(prompt.choices) do
    labels[#labels + 1] = choice.label
    if not choice.approve then
      default = index
    end
  end
  local picked = vim.fn.confirm(prompt.message, table.concat(labels, '\n'), default)
  local choice = prompt.choices[picked]
  if choice == nil or not choice.approve then
    return false
  end
  return true, choice.scope
end

--- The answer for the host: the user's `decide(request)` (default: confirm)
--- returns `true` (allow once), `'session'` (always this session), or `true,
--- 'session'`; anything else denies, and so does an error in it.
function M.answer(request, decide)
  local ok, approve, scope = pcall(decide or M.confirm, request)
  if not ok then
    vim.notify('oma: the permission callback failed: ' .. tostring(approve), vim.log.levels.ERROR)
    return { approve = false }
  end
  if approve == 'session' then
    return { approve = true, scope = 'session' }
  end
  if approve == true then
    return { approve = true, scope = scope == 'session' and 'session' or 'once' }
  end
  return { approve = false }
end

return M
