-- ACP permission requests (`permission: "ask-client"`): the host sends
-- `agent/requestPermission {agentName, title, kind, optionKinds}` and follows
-- `{approve = bool}` (approve picks allow_once, else allow_always; reject picks
-- reject_once, else reject_always). Only the decisions the agent offers are
-- offered to the person; dismissing the question rejects.

local M = {}

local function has(kinds, once, always)
  if vim.tbl_contains(kinds, once) then
    return 'once'
  end
  return vim.tbl_contains(kinds, always) and 'always' or nil
end

--- The question for a request: {message, choices = {{label, approve}}}.
function M.prompt(request)
  local kinds = type(request.optionKinds) == 'table' and request.optionKinds or {}
  local choices = {}
  local allow = has(kinds, 'allow_once', 'allow_always')
  local reject = has(kinds, 'reject_once', 'reject_always')
  if allow then
    choices[#choices + 1] = { label = allow == 'once' and '&Allow' or '&Allow always', approve = true }
  end
  if reject then
    choices[#choices + 1] = { label = reject == 'once' and '&Reject' or '&Reject always', approve = false }
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

--- Ask with vim.fn.confirm (a modal question); returns true to approve.
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
  return choice ~= nil and choice.approve
end

--- The answer for the host: the user's `decide(request)` (default: confirm);
--- anything but `true` rejects, and so does an error in it.
function M.answer(request, decide)
  local ok, approve = pcall(decide or M.confirm, request)
  if not ok then
    vim.notify('oma: the permission callback failed: ' .. tostring(approve), vim.log.levels.ERROR)
    approve = false
  end
  return { approve = approve == true }
end

return M
