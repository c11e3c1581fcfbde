--- flemma.lsp: a small language server for chat buffers that runs inside Neovim (`lsp.enabled`).
--- `vim.lsp.start` gets a Lua function as `cmd` instead of a process; the "server" answers
--- `textDocument/definition` (tool use <-> result, `@./file` references, `include()`) and
--- `textDocument/hover` by asking the host through flemma.navigation, as `gd` does. One client
--- serves every chat buffer; it attaches once Neovim is idle after a chat is opened, so opening a
--- chat does not wait for `vim.lsp` to load.
local lazy = require("flemma.util.lazy")
local navigation = lazy.require("flemma.chat.navigation")
local config = lazy.require("flemma.config")
local M = {}

local H = {
  name = "flemma",
  pending = {}, ---@type table<integer, true>  buffers waiting for the deferred attach
}

local METHOD_NOT_FOUND = -32601
local INTERNAL_ERROR = -32603

--- The buffer of a request's text document (nil when it is not loaded).
local function buffer_of(params)
  local uri = params and params.textDocument and params.textDocument.uri
  if type(uri) ~= "string" then
    return nil
  end
  local bufnr = vim.uri_to_bufnr(uri)
  if vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
end

--- Request handlers: `fun(params, reply)`; `reply(err, result)` once, now or later (a raised
--- error is an error reply).
local handlers = {}

function handlers.initialize(_, reply)
  reply(nil, {
    capabilities = {
      -- Positions in bytes, as the buffer API counts them.
      positionEncoding = "utf-8",
      definitionProvider = true,
      hoverProvider = true,
      -- The server reads the buffer itself: no document synchronisation.
      textDocumentSync = { openClose = false, change = 0 },
    },
    serverInfo = { name = "flemma" },
  })
end

function handlers.shutdown(_, reply)
  reply(nil, vim.NIL)
end

--- A failed question to the host, as an error reply.
local function host_error(err)
  return { code = INTERNAL_ERROR, message = "flemma: " .. tostring(err) }
end

handlers["textDocument/definition"] = function(params, reply)
  local bufnr = buffer_of(params)
  if bufnr == nil then
    return reply(nil, vim.NIL)
  end
  local position = params.position
  navigation.definition(bufnr, position.line, position.character, false, function(err, answer)
    if err then
      return reply(host_error(err))
    end
    if answer == nil or (answer.path == nil and answer.row == nil) then
      return reply(nil, vim.NIL)
    end
    local uri, line = params.textDocument.uri, 0
    if answer.path then
      uri = vim.uri_from_fname(answer.path)
    else
      line = answer.row
    end
    local target = { line = line, character = 0 }
    reply(nil, { uri = uri, range = { start = target, ["end"] = target } })
  end)
end

handlers["textDocument/hover"] = function(params, reply)
  local bufnr = buffer_of(params)
  if bufnr == nil then
    return reply(nil, vim.NIL)
  end
  local position = params.position
  navigation.hover(bufnr, position.line, position.character, function(err, text)
    if err then
      return reply(host_error(err))
    end
    reply(nil, text and { contents = { kind = "markdown", value = text } } or vim.NIL)
  end)
end

--- The in-process "RPC client" `vim.lsp` talks to (vim.lsp.rpc.PublicClient). Replies come
--- after `request` returns (at the earliest on the next tick), as a real server's would: the
--- client records a request after `request` returns and forgets it when the reply comes.
---@param dispatchers vim.lsp.rpc.Dispatchers
function M.server(dispatchers)
  local closing = false
  local exited = false
  local next_id = 0
  local function exit(code, signal)
    closing = true
    if not exited then
      exited = true
      vim.schedule(function()
        dispatchers.on_exit(code, signal)
      end)
    end
  end
  local client = {}
  function client.request(method, params, callback, notify_reply_callback)
    if closing then
      return false
    end
    next_id = next_id + 1
    local id = next_id
    local replied = false
    local function reply(err, result)
      if replied then
        return
      end
      replied = true
      callback(err, result)
      if notify_reply_callback then
        notify_reply_callback(id)
      end
    end
    vim.schedule(function()
      local handler = handlers[method]
      if handler == nil then
        reply({ code = METHOD_NOT_FOUND, message = "flemma: method not supported: " .. tostring(method) })
        return
      end
      local ok, err = pcall(handler, params, reply)
      if not ok then
        reply({ code = INTERNAL_ERROR, message = "flemma: " .. tostring(err) })
      end
    end)
    return true, id
  end
  function client.notify(method)
    if method == "exit" then
      exit(0, 0)
    end
    return not closing
  end
  function client.is_closing()
    return closing
  end
  function client.terminate()
    exit(0, 0)
  end
  return client
end

--- Whether the option asks for the language server (without loading `vim.lsp`).
function M.enabled()
  local ok, cfg = pcall(function()
    return config.get().lsp
  end)
  return ok and type(cfg) == "table" and cfg.enabled ~= false
end

--- Attach the server to a chat buffer now (starting it for the first one). Buffers without a
--- file name are skipped: the protocol names documents by URI.
---@return integer|nil client_id
function M.attach(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].filetype ~= "chat" then
    return nil
  end
  if vim.api.nvim_buf_get_name(bufnr) == "" or vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  if vim.lsp == nil or vim.lsp.start == nil then
    return nil
  end
  return vim.lsp.start({ name = H.name, cmd = M.server }, {
    bufnr = bufnr,
    silent = true,
    reuse_client = function(client)
      return client.name == H.name
    end,
  })
end

--- The running client, if any.
function M.client()
  return vim.lsp.get_clients({ name = H.name })[1]
end

--- For the FileType autocmd: attach once Neovim is idle (a timer of 0 ms runs after the
--- pending events and the first redraw), so opening a chat never waits for `vim.lsp`.
function M.setup_buffer(bufnr)
  if not M.enabled() or H.pending[bufnr] then
    return
  end
  H.pending[bufnr] = true
  vim.defer_fn(function()
    H.pending[bufnr] = nil
    if M.enabled() and vim.api.nvim_buf_is_valid(bufnr) then
      M.attach(bufnr)
    end
  end, 0)
end

return M
