-- Benchmark helpers that run inside Neovim: host cold start and main-loop lag.
local M = {}

--- The time from starting `node -e 0` to its exit, in ms: Node.js itself, the yardstick of a start.
local function bare_node(node)
  local t0 = vim.uv.hrtime()
  local job = vim.fn.jobstart({ node, "-e", "0" })
  assert(job > 0, "could not start " .. node)
  vim.fn.jobwait({ job }, 5000)
  return (vim.uv.hrtime() - t0) / 1e6
end

--- Start the host `runs` times (stopping it in between); each sample is the time from the shim
--- starting the job to the first answered request, in ms. Each start is followed by a run of a
--- bare `node -e 0` (the same executable), the yardstick, in `bare`.
function M.cold_start(runs)
  local host = require("flemma.host")
  local node = (require("flemma.config").get().host or {}).node or "node"
  local samples, bare = {}, {}
  for i = 1, runs do
    local old = host.channel()
    if old then
      host.stop()
      vim.fn.jobwait({ old }, 5000)
      vim.wait(2000, function()
        return host.channel() == nil
      end, 1)
    end
    local t0 = vim.uv.hrtime()
    local chan = assert(host.start())
    local info = vim.rpcrequest(chan, "ping")
    samples[i] = (vim.uv.hrtime() - t0) / 1e6
    assert(info.pid > 0)
    bare[i] = bare_node(node)
  end
  return samples, bare
end

--- Run `cold_start` from the main loop (as a FileType autocmd would start the host, not from
--- inside an RPC request) and report the samples with `User FlemmaBenchColdStart`.
function M.cold_start_async(runs)
  vim.schedule(function()
    local samples, bare = M.cold_start(runs)
    vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchColdStart", data = { samples = samples, bare = bare } })
  end)
end

--- Open `path` from the main loop (as a user's :edit) and report, with User FlemmaBenchOpened:
--- `drawn`, the ms until the buffer is highlighted and folded on screen (`folds` closed folds
--- counted), and `ms`, until the host's message marks for it are shown (`expected` of them).
function M.open_async(path, expected, folds)
  vim.schedule(function()
    local started = vim.uv.hrtime()
    local function mark(label)
      local f = os.getenv("FLEMMA_TRACE")
      if f then
        local s, us = vim.uv.gettimeofday()
        local h = io.open(f, "a")
        h:write(string.format("%.2f lua:%s\n", s * 1000 + us / 1000, label))
        h:close()
      end
    end
    mark("edit")
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    -- The first screen, drawn with the chat's highlights.
    vim.cmd("redraw")
    local drawn = (vim.uv.hrtime() - started) / 1e6
    mark("drawn")
    -- Check (outside the timed part) that it is really folded.
    local closed = 0
    for l = 1, vim.api.nvim_buf_line_count(0) do
      if vim.fn.foldclosed(l) == l then
        closed = closed + 1
      end
    end
    if closed ~= folds then
      error(string.format("expected %d closed folds after opening, found %d", folds, closed))
    end
    local ns = vim.api.nvim_create_namespace("flemma.messages")
    local bufnr = vim.api.nvim_get_current_buf()
    local timer = vim.uv.new_timer()
    timer:start(
      0,
      1,
      vim.schedule_wrap(function()
        if timer:is_closing() then
          return
        end
        if #vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, {}) == expected then
          timer:stop()
          timer:close()
          mark("shown")
          local elapsed = (vim.uv.hrtime() - started) / 1e6
          vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchOpened", data = { ms = elapsed, drawn = drawn } })
        end
      end)
    )
  end)
end

--- Press `keys` from the main loop, as a user would, and report with `User FlemmaBenchNavigated`
--- the ms until the cursor moved or another buffer was entered (`gd`, `gf`), whichever first.
function M.navigate_async(keys)
  vim.schedule(function()
    local group = vim.api.nvim_create_augroup("flemma_bench_navigate", { clear = true })
    local started
    local from = vim.api.nvim_win_get_cursor(0)
    local function done(ev)
      local at = vim.api.nvim_win_get_cursor(0)
      if started == nil or (ev.event == "CursorMoved" and at[1] == from[1] and at[2] == from[2]) then
        return
      end
      local ms = (vim.uv.hrtime() - started) / 1e6
      started = nil
      vim.api.nvim_del_augroup_by_id(group)
      vim.api.nvim_exec_autocmds("User", { pattern = "FlemmaBenchNavigated", data = { ms = ms, event = ev.event } })
    end
    vim.api.nvim_create_autocmd({ "CursorMoved", "BufEnter" }, { group = group, callback = done })
    started = vim.uv.hrtime()
    vim.api.nvim_input(keys)
  end)
end

--- Move through the current (large) chat as a user would, each motion followed by a redraw;
--- returns the slowest motion in ms.
function M.motions()
  local worst = 0
  for _, keys in ipairs({ "G", "gg", "50%", "]m]m]m", "[m", "20\\<C-d>", "10\\<C-u>", "75%", "zR", "G", "zM", "gg" }) do
    local t = vim.uv.hrtime()
    vim.cmd('exe "normal ' .. keys .. '"')
    vim.cmd("redraw")
    worst = math.max(worst, (vim.uv.hrtime() - t) / 1e6)
  end
  return worst
end

--- CPU time used so far, in ms: Neovim's own (getrusage) and its host's (/proc, Linux, in 10 ms
--- ticks; nil elsewhere). Unlike wall time, it holds still while other programs load the machine.
function M.cpu()
  local ru = vim.uv.getrusage()
  local nvim = (ru.utime.sec + ru.stime.sec) * 1000 + (ru.utime.usec + ru.stime.usec) / 1000
  local host
  local pid = require("flemma.host").status().pid
  local handle = pid and io.open("/proc/" .. pid .. "/stat", "r")
  if handle then
    local stat = handle:read("*a")
    handle:close()
    -- Fields 14 and 15 (utime, stime), counted after the command name's closing parenthesis.
    local fields = vim.split(stat:match("%) (.*)$") or "", " ", { plain = true })
    host = ((tonumber(fields[12]) or 0) + (tonumber(fields[13]) or 0)) * 10
  end
  return { nvim = nvim, host = host }
end

local lag = { timer = nil, samples = {}, expected = 0 }

--- Start a repeating timer that records how late each tick fires (ms).
function M.lag_start(interval_ms)
  lag.samples = {}
  lag.timer = vim.uv.new_timer()
  lag.expected = vim.uv.hrtime() + interval_ms * 1e6
  lag.timer:start(interval_ms, interval_ms, function()
    local now = vim.uv.hrtime()
    lag.samples[#lag.samples + 1] = math.max(0, (now - lag.expected) / 1e6)
    lag.expected = now + interval_ms * 1e6
  end)
end

--- Stop the timer and return the samples.
function M.lag_stop()
  if lag.timer then
    lag.timer:stop()
    lag.timer:close()
    lag.timer = nil
  end
  return lag.samples
end

return M
