// The tools every host starts with. `bash`, `read`, `write`, `edit`, `ls`, `grep` and `find` are
// offered to the model by default. `calculator` and `calculator_async` are registered but
// disabled (`enabled = false`): a buffer or the config's tool list must name them, as the seed's
// "extras" are opt-in.

import { bashTool } from './definitions/bash.js';
import { calculatorAsyncTool, calculatorTool } from './definitions/calculator.js';
import { editTool } from './definitions/edit.js';
import { findTool } from './definitions/find.js';
import { grepTool } from './definitions/grep.js';
import { lsTool } from './definitions/ls.js';
import { readTool } from './definitions/read.js';
import { writeTool } from './definitions/write.js';
import type { ToolDefinition } from './registry.js';

export const builtinTools: readonly ToolDefinition[] = [
  bashTool,
  readTool,
  writeTool,
  editTool,
  lsTool,
  grepTool,
  findTool,
  { ...calculatorTool, enabled: false },
  { ...calculatorAsyncTool, enabled: false },
];
