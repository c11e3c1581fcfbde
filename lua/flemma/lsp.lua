--- flemma.lsp: a small language server for chat buffers that runs inside Neovim (`lsp.enabled`).
--- `vim.lsp.start` gets a Lua function as `cmd` instead of a process; the "server" answers
--- `textDocument/definition` (tool use <-> result, `@./file` references, `include()`) and
--- `textDocument/hover` from flemma.navigation, which reads the buffer text. One client serves
--- every chat buffer; it attaches once Neovim is idle after a chat is opened, so opening a chat
--- does not wait for `vim.lsp` to load.
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

--- Request handlers: `fun(params): result` (raise for an error reply).
local handlers = {}

function handlers.initialize()
  return {
    capabilities = {
      -- Positions in bytes, as the buffer API counts them.
      positionEncoding = "utf-8",
      definitionProvider = true,
      hoverProvider = true,
      -- The server reads the buffer itself: no document synchronisation.
      textDocumentSync = { openClose = false, change = 0 },
    },
    serverInfo = { name = "flemma" },
  }
end

function handlers.shutdown()
  return vim.NIL
end

handlers["textDocument/definition"] = function(params)
  local bufnr = buffer_of(params)
  if bufnr == nil then
    return vim.NIL
  end
  local navigation = require("flemma.navigation")
  local target = navigation.definition(bufnr, params.position.line, params.position.character)
  if target == nil then
    return vim.NIL
  end
  local uri, line = params.textDocument.uri, 0
  if target.path then
    uri = vim.uri_from_fname(target.path)
  else
    line = target.row
  end
  local position = { line = line, character = 0 }
  return { uri = uri, range = { start = position, ["end"] = position } }
end

handlers["textDocument/hover"] = function(params)
  local bufnr = buffer_of(params)
  if bufnr == nil then
    return vim.NIL
  end
  local text = require("flemma.navigation").hover(bufnr, params.position.line, params.position.character)
  if text == nil then
    return vim.NIL
  end
  return { contents = { kind = "markdown", value = text } }
end

--- The in-process "RPC client" `vim.lsp` talks to (vim.lsp.rpc.PublicClient). Replies are
--- scheduled, as a real server's would arrive: the client records a request after `request`
--- returns and forgets it when the reply comes.
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
    vim.schedule(function()
      local handler = handlers[method]
      local err, result
      if handler == nil then
        err = { code = METHOD_NOT_FOUND, message = "flemma: method not supported: " .. tostring(method) }
      else
        local ok, value = pcall(handler, params)
        if ok then
          result = value
        else
          err = { code = INTERNAL_ERROR, message = "flemma: " .. tostring(value) }
        end
      end
      callback(err, result)
      if notify_reply_callback then
        notify_reply_callback(id)
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
    return require("flemma.config").get().lsp
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
