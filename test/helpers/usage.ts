// The usage record of one request, as the host reports it, for the tests of usage and cost.

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
