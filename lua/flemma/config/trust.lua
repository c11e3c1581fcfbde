--- flemma.trust: the one trust decision of a chat buffer (docs/security.md, "Trust").
---
--- A file is trusted when Neovim's trust database (`:trust`, the one `.exrc` files use) allows its
--- path **and** what only a trusted file may use — its frontmatter, its template code and its file
--- references, summed up by the host as a digest of the buffer's tree — is what was trusted:
---
--- - `:trust` (any `vim.secure.trust()`, which Flemma follows) trusts the buffer as it is, and
---   Flemma records its digest beside the database;
--- - later, the digest recorded for the path must match (or the database's content hash the
---   file's), so a change made outside this Neovim (`git pull`) asks again, while a change to the
---   conversation's text does not;
--- - the user's own edits keep the trust: once trusted, a buffer stays trusted until it is read
---   from disk again, and writing it refreshes the database (as `:trust` would);
--- - a buffer with no file on disk yet is being written by the user and is trusted; when it is
---   first written its path goes into the database (also when the user has typed in it before
---   Flemma first asked about it).
---
--- An approval is the user's (docs/approval.md, "Statuses from a file that is not trusted"): when
--- a chat is read from disk, the statuses of its placeholders that act (`approved`, `denied`,
--- `rejected`) are recorded, by tool id, from one scan of the lines as read. While the buffer is
--- not trusted, the host judges a placeholder whose status is still the recorded one as if it
--- were pending; a status set in this Neovim (the host forgets the ids it rewrote or the user
--- set, a status typed by hand differs) is honoured, and `:trust` honours them all.
local lazy = require("flemma.util.lazy")
local editor_state = lazy.require("flemma.host.editor_state")
local host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")
local scan = lazy.require("flemma.ui.scan")
local M = {}

local H = {
  --- bufnr → true: trusted since it was read, and edited only here since
  session = {},
  --- The buffer variable that says a buffer had no file when it became a chat (the user is
  --- writing it). A buffer variable, not a table here: naming a buffer that had none (`:w name`)
  --- sends a BufWipeout for it, which would forget a table's entry.
  authored = "flemma_authored",
  --- bufnr → { tool id → status }: the acting placeholder statuses as read from disk
  from_disk = {},
  --- The recorded digests, as read from disk, with the file's mtime
  records = nil,
}

function H.is_authored(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr) and vim.b[bufnr][H.authored] == true
end

function H.set_authored(bufnr, value)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.b[bufnr][H.authored] = value
  end
end

--- The records file: real path → digest.
function H.records_path()
  return vim.fs.joinpath(vim.fn.stdpath("state"), "flemma", "trust.json")
end

--- The records as read from disk (cached by the file's mtime): `files` (real path → digest) and
--- `includes` (chat's real path → { included file's real path → sha256 of its text }).
function H.read_all()
  local path = H.records_path()
  local stat = vim.uv.fs_stat(path)
  local mtime = stat and (stat.mtime.sec * 1e9 + stat.mtime.nsec) or 0
  if H.records and H.records.mtime == mtime then
    return H.records
  end
  local files, includes = {}, {}
  if stat then
    local ok, lines = pcall(vim.fn.readfile, path)
    local decoded_ok, decoded = false, nil
    if ok then
      decoded_ok, decoded = pcall(vim.json.decode, table.concat(lines, "\n"))
    end
    if decoded_ok and type(decoded) == "table" then
      files = type(decoded.files) == "table" and decoded.files or files
      includes = type(decoded.includes) == "table" and decoded.includes or includes
    end
  end
  H.records = { mtime = mtime, files = files, includes = includes }
  return H.records
end

function H.read_records()
  return H.read_all().files
end

--- Writes the records after `change(files, includes)` (on copies) changed them.
function H.update_records(change)
  local records = H.read_all()
  local files, includes = vim.deepcopy(records.files), vim.deepcopy(records.includes)
  if not change(files, includes) then
    return
  end
  local file = H.records_path()
  vim.fn.mkdir(vim.fs.dirname(file), "p")
  local encoded = vim.json.encode({
    version = 1,
    files = next(files) == nil and vim.empty_dict() or files,
    includes = next(includes) == nil and vim.empty_dict() or includes,
  })
  if pcall(vim.fn.writefile, { encoded }, file) then
    H.records = nil
  end
end

function H.write_record(path, digest)
  H.update_records(function(files)
    if files[path] == digest then
      return false
    end
    files[path] = digest
    return true
  end)
end

--- The trust database's entry for a path: its hash, "!" (denied) or nil (not listed).
function H.db_entry(path)
  local ok, lines = pcall(vim.fn.readfile, vim.fs.joinpath(vim.fn.stdpath("state"), "trust"))
  if not ok then
    return nil
  end
  for _, line in ipairs(lines) do
    local hash, listed = line:match("^(%S+) (.+)$")
    if listed == path then
      return hash
    end
  end
  return nil
end

--- The hashes `:trust` would have recorded for the buffer as it is, and for its file on disk.
function H.content_hashes(bufnr, path)
  local hashes = {}
  local newline = vim.bo[bufnr].fileformat == "unix" and "\n" or "\r\n"
  local contents = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), newline)
  if vim.bo[bufnr].endofline then
    contents = contents .. newline
  end
  hashes[vim.fn.sha256(contents)] = true
  local file = io.open(path, "rb")
  if file then
    local disk = file:read("*a")
    file:close()
    if disk then
      hashes[vim.fn.sha256(disk)] = true
    end
  end
  return hashes
end

--- The buffer's file: its name as given and its real path (nil when there is no file yet).
function H.paths(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return nil, nil
  end
  local path = vim.fn.fnamemodify(name, ":p")
  return path, vim.uv.fs_realpath(path)
end

--- The decision for a buffer whose tree has `digest` (from the host; may be nil):
--- `{trusted, why, placeholders}` with `why` one of "authored", "allowed", "untrusted", "denied",
--- "changed", and `placeholders` (only when not trusted, and only when there are any) the statuses
--- read from disk that are not the user's, by tool id.
function M.state(bufnr, digest)
  local state = H.decide(bufnr, digest)
  if not state.trusted then
    local recorded = H.from_disk[bufnr]
    if recorded ~= nil and next(recorded) ~= nil then
      state.placeholders = vim.deepcopy(recorded)
    end
  end
  return state
end

function H.decide(bufnr, digest)
  local path, real = H.paths(bufnr)
  if path == nil then
    return { trusted = true, why = "authored" }
  end
  local entry = H.db_entry(real or path)
  if entry == "!" then
    H.session[bufnr] = nil
    return { trusted = false, why = "denied" }
  end
  if entry ~= nil then
    local key = real or path
    local trusted = H.session[bufnr]
      or (type(digest) == "string" and H.read_records()[key] == digest)
      -- The database's hash is the file's: trusted as it is (by an earlier Flemma, or by path).
      or H.content_hashes(bufnr, key)[entry]
    if not trusted then
      return { trusted = false, why = "changed" }
    end
    H.session[bufnr] = true
    if type(digest) == "string" then
      -- What is trusted now: the code as trusted, or as the user edited it here.
      H.write_record(key, digest)
    end
    return { trusted = true, why = "allowed" }
  end
  if real == nil or H.is_authored(bufnr) then
    -- No file yet: the user is writing it. Its path is trusted once it is written.
    H.set_authored(bufnr, true)
    return { trusted = true, why = "authored" }
  end
  H.session[bufnr] = nil
  return { trusted = false, why = "untrusted" }
end

--- The hash of an included file's text as `include()` reads it (nil when it cannot be read).
function H.file_hash(path)
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return nil
  end
  return vim.fn.sha256(table.concat(lines, "\n"))
end

--- A trusted chat's template includes `path` (its real path), whose text is `text`: nil when that
--- is what the chat was trusted with — recorded the first time the chat includes it, kept up to
--- date by `:trust` and by the user's own writes of it — else the message that it changed.
function M.included(bufnr, path, text)
  local chat, real = H.paths(bufnr)
  local key = real or chat
  if key == nil then
    return nil
  end
  local hash = vim.fn.sha256(text)
  local recorded = (H.read_all().includes[key] or {})[path]
  if recorded == hash then
    return nil
  elseif recorded ~= nil then
    return string.format(
      "%s: %s changed outside Neovim: review it, then :trust",
      vim.fn.fnamemodify(key, ":t"),
      vim.fn.fnamemodify(path, ":~:.")
    )
  end
  H.update_records(function(_, includes)
    includes[key] = includes[key] or {}
    includes[key][path] = hash
    return true
  end)
  return nil
end

--- The chat at `key` was trusted as it is: the files it included are trusted as they are now.
function H.retrust_includes(key)
  H.update_records(function(_, includes)
    local changed = false
    for path, hash in pairs(includes[key] or {}) do
      local now = H.file_hash(path)
      if now ~= hash then
        includes[key][path] = now
        changed = true
      end
    end
    return changed
  end)
end

--- Any buffer was written: a file that chats include, written by the user here, is what those
--- chats trust from now on.
function M.on_any_write(bufnr)
  local real = vim.uv.fs_realpath(vim.api.nvim_buf_get_name(bufnr))
  if real == nil then
    return
  end
  local holders = {}
  for key, paths in pairs(H.read_all().includes) do
    if type(paths) == "table" and paths[real] ~= nil then
      holders[#holders + 1] = key
    end
  end
  if #holders == 0 then
    return
  end
  local hash = H.file_hash(real)
  H.update_records(function(_, includes)
    for _, key in ipairs(holders) do
      includes[key][real] = hash
    end
    return true
  end)
end

--- `vim.secure.trust()` was called (`:trust`, `:trust ++deny`, `:trust ++remove`): a chat buffer
--- it names is trusted as it is now, or not any more.
function H.on_trust(opts)
  local bufnr = opts.bufnr
  if bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  elseif bufnr == nil and type(opts.path) == "string" then
    local full = vim.fn.fnamemodify(opts.path, ":p")
    for _, candidate in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(candidate) == full then
        bufnr = candidate
      end
    end
  end
  if type(bufnr) ~= "number" or bufnr <= 0 or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if vim.bo[bufnr].filetype ~= "chat" then
    return
  end
  local before = H.session[bufnr]
  H.session[bufnr] = opts.action == "allow" or nil
  if opts.action ~= "allow" or not before then
    -- The decision changed: the host's held one is stale (a trusted chat written again is not).
    editor_state.stale(bufnr)
  end
  if opts.action ~= "allow" then
    H.set_authored(bufnr, nil)
  else
    -- Trusted as it is: its placeholders' statuses are honoured, and its includes as they are.
    H.from_disk[bufnr] = nil
    local path, real = H.paths(bufnr)
    if real or path then
      H.retrust_includes(real or path)
    end
  end
  -- What the diagnostics say about the file's trust is stale now.
  if host.channel() then
    host.notify("buffer:trust", { bufnr = bufnr })
  end
end

--- Follow `vim.secure.trust()`: `:trust` calls it (looked up when it runs, on 0.10 and later), so
--- wrapping it is how Flemma learns that the user trusted a chat at the moment they do, before
--- they edit it further (the database's hash is of the buffer at that moment only).
function M.bootstrap()
  local secure = require("vim.secure")
  if H.original then
    return
  end
  H.original = secure.trust
  secure.trust = function(opts)
    local results = { H.original(opts) }
    if results[1] and type(opts) == "table" then
      local ok, err = pcall(H.on_trust, opts)
      if not ok then
        log.write("warn", "following :trust failed: " .. tostring(err))
      end
    end
    return unpack(results)
  end
end

--- The statuses that act (`approved`, `denied`, `rejected`) of the buffer's placeholders, by
--- tool id, from one scan of its lines (flemma.ui.scan, the shim's reading of the grammar).
function H.acting_statuses(bufnr)
  local recorded = {}
  local structure = scan.scan(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  for _, block in ipairs(structure.blocks) do
    local status = block.kind == "tool_result" and block.status
    if status == "approved" or status == "denied" or status == "rejected" then
      recorded[block.id] = status
    end
  end
  return recorded
end

--- Whether the buffer is a chat (its filetype, or its name while detection has not run yet).
function H.is_chat(bufnr)
  return vim.bo[bufnr].filetype == "chat" or vim.api.nvim_buf_get_name(bufnr):match("%.chat$") ~= nil
end

--- The buffer was read from disk (opened, reloaded after a change outside, `:e!`): what it holds
--- now was not written here, so its trust is judged again, and the statuses of its placeholders
--- are recorded as not the user's.
function M.on_read(bufnr)
  H.session[bufnr] = nil
  H.set_authored(bufnr, nil)
  if H.is_chat(bufnr) then
    H.from_disk[bufnr] = H.acting_statuses(bufnr)
    -- The host's held decision is stale (`buffer:trust` says so for `:trust`).
    editor_state.stale(bufnr)
  end
end

--- A buffer became a chat (its FileType): one with no file on disk is the user's, from now on
--- (`:e new.chat`, `:enew`); one read from disk whose statuses were not recorded yet (its
--- filetype set after it was read) has them recorded, as long as it holds what was read.
function M.setup_buffer(bufnr)
  local _, real = H.paths(bufnr)
  if real == nil then
    H.set_authored(bufnr, true)
  elseif H.from_disk[bufnr] == nil and not vim.bo[bufnr].modified then
    H.from_disk[bufnr] = H.acting_statuses(bufnr)
  end
end

--- Host → Lua (`trust.confirm`): the statuses of these tool ids were set in this Neovim (by the
--- user, or by the approval chain after it judged them): they are honoured from now on.
function M.confirm(params)
  local recorded = H.from_disk[params.bufnr]
  if recorded == nil then
    return nil
  end
  for _, id in ipairs(params.ids or {}) do
    recorded[id] = nil
  end
  return nil
end

--- After a write (of the buffer to `written`, the file's name): a chat the user wrote from
--- scratch goes into the trust database (also when it was first named by this write, `:w name`
--- or `:saveas`), and a trusted chat's entry follows the user's edits.
function M.on_write(bufnr, written)
  if not (H.is_authored(bufnr) or H.session[bufnr]) then
    return
  end
  local _, real = H.paths(bufnr)
  local target = type(written) == "string" and vim.uv.fs_realpath(vim.fn.fnamemodify(written, ":p")) or nil
  if target ~= nil and target ~= real then
    -- `:w other.chat` writes a copy: the buffer keeps its name and its state, and the copy is a
    -- file like any other (`vim.secure.trust()` allows only a buffer, not a path).
    return
  end
  if real ~= nil and H.db_entry(real) == "!" then
    return
  end
  -- The database's directory may not exist yet in a fresh state directory.
  pcall(vim.fn.mkdir, vim.fn.stdpath("state"), "p")
  local ok, allowed = pcall(vim.secure.trust, { action = "allow", bufnr = bufnr })
  if ok and allowed then
    H.set_authored(bufnr, nil)
    H.session[bufnr] = true
  end
end

function M.forget(bufnr)
  H.session[bufnr] = nil
  H.from_disk[bufnr] = nil
end

--- The message for a chat whose Lua (`what`: "frontmatter" or "templates") may not run: true for
--- every frontmatter language (only a Lua frontmatter and templates run code), and short enough
--- for an 80-column command line with a usual file name.
function M.message(bufnr, state, what)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":t")
  if name == "" then
    name = "this chat"
  end
  if state.why == "denied" then
    return string.format("%s: denied in the trust database (:trust ++remove)", name)
  elseif state.why == "changed" then
    return string.format("%s changed outside Neovim: review it, then :trust", name)
  end
  what = what == "templates" and "templates" or "Lua frontmatter"
  return string.format("%s: review it, then :trust to run its %s", name, what)
end

return M
