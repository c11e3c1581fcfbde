// Types of scripts/gen-defaults.mjs, for the tests that import it.
export const DEFAULTS_FILE: string;
export function defaultsText(json: string): Promise<string>;
