// The usage record of one request, as the host reports it, and the usage bar that shows it, for
// the tests of usage and cost.
import { type Driver } from './driver.js';

/**
 * A Claude Sonnet 4.6 request's record without its buffer, file and times: 2000 tokens in, 410
 * out (with thinking), 6000 read from the cache and 1000 written to it, at the model's prices.
 */
export const SONNET_RECORD = {
  provider: 'anthropic',
  model: 'claude-sonnet-4-6',
  input_tokens: 2000,
  output_tokens: 410,
  thoughts_tokens: 0,
  cache_read_input_tokens: 6000,
  cache_creation_input_tokens: 1000,
  input_price: 3,
  output_price: 15,
  cache_read_price: 0.3,
  cache_write_price: 3.75,
  output_has_thoughts: true,
};

/** The text of the usage bar as the user sees it (a floating window), or null when none shows. */
export async function usageBar(
  d: Driver,
  wait: 'shown' | 'gone' | 'now' = 'shown',
): Promise<string | null> {
  const text = await d.lua<string | null>(
    `local wait = ...
    local function find()
      for _, win in ipairs(vim.api.nvim_list_wins()) do
        local buf = vim.api.nvim_win_get_buf(win)
        if vim.api.nvim_win_get_config(win).relative ~= "" and vim.bo[buf].filetype == "flemma_usage" then
          return vim.api.nvim_buf_get_lines(buf, 0, -1, false)[1]
        end
      end
    end
    if wait == "shown" then
      vim.wait(5000, function() return find() ~= nil end, 10)
    elseif wait == "gone" then
      vim.wait(5000, function() return find() == nil end, 10)
    end
    return find() or vim.NIL`,
    wait,
  );
  return text;
}
