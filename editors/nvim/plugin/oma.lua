-- The :Oma* commands (see lua/oma/init.lua). Needs Neovim 0.7 (nvim_create_user_command).

if vim.g.loaded_oma then
  return
end
vim.g.loaded_oma = true

if vim.fn.has('nvim-0.7') == 0 then
  vim.api.nvim_echo({ { 'oma.nvim needs Neovim 0.7 or newer', 'ErrorMsg' } }, true, {})
  return
end

local command = vim.api.nvim_create_user_command

--- The lines of a command's range as a selection, or nil without a range.
local function range_selection(opts)
  if opts.range == 0 then
    return nil
  end
  local lines = vim.api.nvim_buf_get_lines(0, opts.line1 - 1, opts.line2, false)
  local name = vim.fn.expand('%:.')
  return {
    text = table.concat(lines, '\n'),
    file_name = name ~= '' and name or nil,
    filetype = vim.bo.filetype ~= '' and vim.bo.filetype or nil,
  }
end

--- Run `go(text)` with the command's argument, or with what the user types.
local function with_text(opts, prompt, go)
  if opts.args ~= '' then
    go(opts.args)
    return
  end
  vim.ui.input({ prompt = prompt }, function(text)
    if text and text ~= '' then
      go(text)
    end
  end)
end

command('OmaAsk', function(opts)
  local selection = range_selection(opts)
  with_text(opts, 'Ask: ', function(text)
    require('oma').ask(text, selection)
  end)
end, { nargs = '*', range = true, desc = 'Ask the agent (one-off, streamed); a range is sent along' })

command('OmaChat', function(opts)
  local selection = range_selection(opts)
  with_text(opts, 'Chat: ', function(text)
    require('oma').chat(text, selection)
  end)
end, { nargs = '*', range = true, desc = "A turn in the agent's conversation" })

command('OmaImage', function(opts)
  local path = opts.fargs[1]
  local question = table.concat(vim.list_slice(opts.fargs, 2), ' ')
  require('oma').image(path, question)
end, { nargs = '+', complete = 'file', desc = 'Ask about an image: :OmaImage {path} {question}' })

command('OmaRun', function(opts)
  local selection = range_selection(opts)
  if selection == nil then
    -- Without a range: the last visual selection.
    local first, last = vim.fn.line("'<"), vim.fn.line("'>")
    if first == 0 then
      vim.notify('oma: select some lines first', vim.log.levels.ERROR)
      return
    end
    selection = range_selection({ range = 2, line1 = first, line2 = last })
  end
  require('oma').run(selection)
end, { range = true, desc = 'Run the agent once on the selected lines (oma/runAgent)' })

command('OmaHistory', function()
  require('oma').history()
end, { desc = "Show the agent's conversation" })

command('OmaReset', function()
  require('oma').reset()
end, { desc = "Clear the agent's conversation" })

command('OmaCancel', function()
  require('oma').cancel()
end, { desc = 'Cancel every run in flight' })

command('OmaAgent', function(opts)
  if opts.args == '' then
    require('oma').pick_agent()
  else
    require('oma').use_agent(opts.args)
  end
end, {
  nargs = '?',
  complete = function(lead)
    return vim.tbl_filter(function(name)
      return name:sub(1, #lead) == lead
    end, require('oma').agent_names())
  end,
  desc = 'Pick the agent the next command asks: :OmaAgent {name}, or a list without one',
})

command('OmaModels', function()
  require('oma').pick_model()
end, { desc = "Pick the agent's model from its provider's list (models/list)" })
