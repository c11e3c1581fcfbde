// Types of scripts/prepare.mjs, for the unit test that imports it.
export const root: string;
export function dependenciesOutdated(dir?: string): string | undefined;
export function ensureDependencies(): boolean;
export function ensureBuild(): boolean;
