--- flemma.util.suggest: "did you mean …?" helpers for option names and command names.
local M = {}

local H = {}

--- Levenshtein edit distance between two strings, counted in bytes.
---@param a string
---@param b string
---@return integer
function M.distance(a, b)
  if a == b then
    return 0
  end
  local la, lb = #a, #b
  if la == 0 then
    return lb
  end
  if lb == 0 then
    return la
  end
  -- Two rolling rows are enough: row i only needs row i - 1.
  local previous, current = {}, {}
  for j = 0, lb do
    previous[j] = j
  end
  for i = 1, la do
    current[0] = i
    local ca = a:byte(i)
    for j = 1, lb do
      local cost = ca == b:byte(j) and 0 or 1
      current[j] = math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
    end
    previous, current = current, previous
  end
  return previous[lb]
end

--- The largest distance still worth suggesting for a word of this length.
---@param word string
---@return integer
function H.threshold(word)
  return math.max(2, math.floor(#word / 3))
end

--- The candidate closest to `word`, or nil when none is reasonably close.
--- Ties are broken alphabetically, so the answer does not depend on the order of `candidates`.
---@param word string
---@param candidates string[]
---@return string|nil
function M.closest(word, candidates)
  if type(word) ~= "string" or type(candidates) ~= "table" then
    return nil
  end
  local limit = H.threshold(word)
  local best, best_distance = nil, math.huge
  for _, candidate in ipairs(candidates) do
    if type(candidate) == "string" then
      local d = M.distance(word, candidate)
      if d < best_distance or (d == best_distance and best ~= nil and candidate < best) then
        best, best_distance = candidate, d
      end
    end
  end
  if best ~= nil and best_distance <= limit then
    return best
  end
  return nil
end

return M
