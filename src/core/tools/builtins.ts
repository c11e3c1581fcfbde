// The tools every host starts with. `bash`, `read`, `write`, `edit`, `ls`, `grep` and `find` are
// offered to the model by default. `calculator` and `calculator_async` are registered but
// disabled (`enabled = false`): a buffer or the config's tool list must name them, as the
// "extras" are opt-in (docs/tools.md, "Built-ins"). So are `web_fetch` and the `process_*` tools (issue 9, docs/tools.md).
// The host makes them once (`createBuiltinTools`) with what outlives a call: its background
// processes and what it learnt about the installed search programs.

import type { ProcessManager } from './background.js';
import { bashTool } from './definitions/bash.js';
import { calculatorAsyncTool, calculatorTool } from './definitions/calculator.js';
import { editTool } from './definitions/edit.js';
import { createFindTool } from './definitions/find.js';
import { createGrepTool } from './definitions/grep.js';
import { lsTool } from './definitions/ls.js';
import { readTool } from './definitions/read.js';
import { writeTool } from './definitions/write.js';
import { webFetchTool } from './definitions/web-fetch.js';
import { processTools } from './definitions/process-tools.js';
import type { Probes } from './probes.js';
import type { PersonalityPart, ToolDefinition } from './registry.js';

/** What the built-in `coding-assistant` personality says about each tool. */
const CODING: Record<string, PersonalityPart> = {
  bash: {
    snippet: 'run a shell command in the project (tests, builds, git, scripts)',
    guidelines: [
      'Prefer the dedicated tools (read, grep, find, ls, edit, write) over shell equivalents.',
      'Keep commands non-interactive, and say in `label` why you run them.',
    ],
  },
  read: {
    snippet: 'read a file (a range of lines with offset/limit; images and PDFs too)',
    guidelines: ['Read a file before you edit it.'],
  },
  write: { snippet: 'create a file or replace its whole content' },
  edit: {
    snippet: 'replace one exact, unique piece of text in a file',
    guidelines: [
      'Make `oldText` long enough to match exactly once; make several small edits rather than one large one.',
    ],
  },
  ls: { snippet: 'list a directory' },
  grep: { snippet: 'search file contents with a regular expression' },
  find: { snippet: 'find files by name pattern' },
};

/** Flynn's names for Flemma's tools, so doc-style policies (`file.*`, `shell.*`) match them. */
const FLYNN_ALIASES: Record<string, string[]> = {
  read: ['file.read'],
  write: ['file.write'],
  edit: ['file.edit'],
  ls: ['file.list'],
  grep: ['file.grep'],
  find: ['file.find'],
  bash: ['shell.exec'],
};

function withPersonality(def: ToolDefinition): ToolDefinition {
  const part = CODING[def.name];
  const aliases = FLYNN_ALIASES[def.name];
  const withAliases = aliases === undefined ? def : { ...def, aliases };
  return part === undefined
    ? withAliases
    : { ...withAliases, personalities: { 'coding-assistant': part } };
}

/** What the built-in tools keep beyond one call; the host owns both. */
export interface BuiltinToolsHost {
  /** The background processes of the `process_*` tools. */
  processes: ProcessManager;
  /** Which search programs `grep` and `find` found. */
  probes: Probes;
}

export function createBuiltinTools(host: BuiltinToolsHost): ToolDefinition[] {
  return [
    bashTool,
    readTool,
    writeTool,
    editTool,
    lsTool,
    createGrepTool({ probes: host.probes }),
    createFindTool({ probes: host.probes }),
    { ...calculatorTool, enabled: false },
    { ...calculatorAsyncTool, enabled: false },
    // Opt-in (network access, processes that outlive the turn): a buffer or `tools` names them.
    { ...webFetchTool, enabled: false },
    ...processTools(host.processes).map((def) => ({ ...def, enabled: false })),
  ].map(withPersonality);
}
