-- Request building: what an ask turns into on the wire
-- (docs/protocol.md, "Data types").
--
-- An ask is a question, optionally a selection, optionally an image file. It
-- becomes content blocks (question text, selection text, a base64 ImageBlock
-- whose media type comes from the file extension). Agents with an external
-- backend (process, ACP) take strings only, so an all-text ask goes to them as
-- one string; an image still goes as blocks and the host's InvalidMessageError
-- is shown rather than the client hiding the boundary.
--
-- Neovim 0.7 has no vim.base64 (0.10+), hence the small encoder here.

local M = {}

M.media_types = {
  png = 'image/png',
  jpg = 'image/jpeg',
  jpeg = 'image/jpeg',
  gif = 'image/gif',
  webp = 'image/webp',
}

local alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
local sextet = {}
for i = 1, 64 do
  sextet[i - 1] = alphabet:sub(i, i)
end

--- Standard base64 (RFC 4648, with padding) of a byte string.
function M.base64(bytes)
  local out = {}
  local n = #bytes
  for i = 1, n - 2, 3 do
    local a, b, c = bytes:byte(i, i + 2)
    local v = a * 65536 + b * 256 + c
    out[#out + 1] = sextet[math.floor(v / 262144)]
      .. sextet[math.floor(v / 4096) % 64]
      .. sextet[math.floor(v / 64) % 64]
      .. sextet[v % 64]
  end
  local rest = n % 3
  if rest == 1 then
    local a = bytes:byte(n)
    out[#out + 1] = sextet[math.floor(a / 4)] .. sextet[(a % 4) * 16] .. '=='
  elseif rest == 2 then
    local a, b = bytes:byte(n - 1, n)
    local v = a * 256 + b
    out[#out + 1] = sextet[math.floor(v / 1024)] .. sextet[math.floor(v / 16) % 64] .. sextet[(v % 16) * 4] .. '='
  end
  return table.concat(out)
end

--- The media type of an image path, or nil.
function M.media_type(path)
  local ext = path:match('%.([%w]+)$')
  return ext and M.media_types[ext:lower()] or nil
end

--- An ImageBlock read from `path`; errors with a readable message.
function M.image_block(path)
  local media_type = M.media_type(path)
  if not media_type then
    local name = vim.fn.fnamemodify(path, ':t')
    error(string.format('%s: not an image type oma-host sends (png, jpg, jpeg, gif, webp)', name), 0)
  end
  local file, why = io.open(vim.fn.expand(path), 'rb')
  if not file then
    error('cannot read ' .. why, 0) -- io.open's reason starts with the path
  end
  local bytes = file:read('*a')
  file:close()
  return { type = 'image', source = { type = 'base64', media_type = media_type, data = M.base64(bytes) } }
end

--- The selection as a fenced block, with a fence longer than any backtick run in it.
function M.selection_text(selection)
  local longest = 2
  for run in selection.text:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  local fence = string.rep('`', longest + 1)
  local label = selection.file_name and ('Selection from ' .. selection.file_name .. ':\n') or 'Selection:\n'
  local body = selection.text
  if body:sub(-1) ~= '\n' then
    body = body .. '\n'
  end
  return label .. fence .. (selection.filetype or '') .. '\n' .. body .. fence
end

--- The ask as content blocks: question, selection, image.
function M.blocks(ask)
  local blocks = {}
  if ask.question and ask.question:match('%S') then
    blocks[#blocks + 1] = { type = 'text', text = ask.question }
  end
  if ask.selection and ask.selection.text ~= '' then
    blocks[#blocks + 1] = { type = 'text', text = M.selection_text(ask.selection) }
  end
  if ask.image then
    blocks[#blocks + 1] = ask.image
  end
  if #blocks == 0 then
    error('nothing to ask: give a question, a selection or an image', 0)
  end
  return blocks
end

local function all_text(blocks)
  for _, block in ipairs(blocks) do
    if block.type ~= 'text' then
      return false
    end
  end
  return true
end

--- agent/prompt input: blocks, or one string for a string-only agent.
function M.prompt_input(agent, ask)
  local blocks = M.blocks(ask)
  if agent.backend and all_text(blocks) then
    local texts = {}
    for _, block in ipairs(blocks) do
      texts[#texts + 1] = block.text
    end
    return table.concat(texts, '\n\n')
  end
  return blocks
end

--- agent/stream and oma/runAgent input: the blocks as one user message.
function M.run_input(agent, ask)
  local input = M.prompt_input(agent, ask)
  if type(input) == 'string' then
    return input
  end
  return { { role = 'user', content = input } }
end

return M
