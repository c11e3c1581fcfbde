// Types of scripts/helptags.mjs, for the tests that import it.
export function helptagsText(dir: string): string;
export function writeHelptags(dir: string): number;
