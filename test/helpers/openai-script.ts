// Pieces of scripted OpenAI Responses streams for the fake provider.

let sequence = 0;

/** A Responses stream event of `type` with `fields`, numbered in the order made. */
export function responsesEvent(
  type: string,
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  sequence += 1;
  return { type, sequence_number: sequence, ...fields };
}

/** The `response` object a Responses event carries: `model`'s, with `status` and no output. */
export function responsesResponse(status: string, model: string): Record<string, unknown> {
  return { id: 'resp_1', object: 'response', model, status, output: [] };
}
