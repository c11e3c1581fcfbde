// Looking a model up in a table keyed by model id (prices, output limits): the exact id first,
// else the longest known id the model is a dated or tagged variant of.

/**
 * Whether `model` is a variant of the known id `known`: a dated or tagged id of the same family
 * (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`, `gemini-2.5-flash-preview-09-2025`,
 * `claude-opus-4-1@20250805` on Vertex), but not another version of it (`claude-opus-4-9` is
 * not `claude-opus-4`, `gpt-5.7` not `gpt-5`).
 */
export function isVariant(model: string, known: string): boolean {
  if (!model.startsWith(known)) return false;
  const rest = model.slice(known.length);
  if (rest.startsWith('@')) return true;
  return rest.startsWith('-') && !/^-\d{1,2}(?:\D|$)/.test(rest);
}

/** The entry of `model` in `table`: its own, else its longest known family's; or undefined. */
export function lookupModel<T>(table: Readonly<Record<string, T>>, model: string): T | undefined {
  if (Object.prototype.hasOwnProperty.call(table, model)) return table[model];
  let best = '';
  for (const known of Object.keys(table)) {
    if (known.length > best.length && isVariant(model, known)) best = known;
  }
  return best === '' ? undefined : table[best];
}
