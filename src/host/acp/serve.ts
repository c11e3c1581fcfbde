// The file and terminal requests of a chat's agent, served (docs/agents.md, "Files and
// terminals"): the `AgentServices` the SDK's client handlers call (src/host/acp/process.ts), over
// the host's file requests (fs.ts) and the agent's own terminals (terminal.ts).
import { homedir } from 'node:os';
import type { HostBase } from '../base.js';
import { type PreparePorts, sandboxResolver } from '../tools/prepare.js';
import type { AgentServices } from './process.js';
import { AgentFiles, type AgentScope, type ServePorts } from './fs.js';
import { AgentTerminals } from './terminal.js';

/** What one agent gets: its services, and the end of its terminals (the agent ended). */
export interface Served {
  services: AgentServices;
  close(): void;
}

/** The services of an agent whose chat `scope` answers (as its running turn has it). */
export type ServeAgent = (scope: () => AgentScope) => Served;

export function agentServices(ports: ServePorts): ServeAgent {
  const files = new AgentFiles(ports);
  return (scope) => {
    const terminals = new AgentTerminals(ports);
    return {
      services: {
        readTextFile: (params) => files.read(scope(), params),
        writeTextFile: (params) => files.write(scope(), params),
        createTerminal: (params) => terminals.create(scope(), params),
        terminalOutput: (id) => terminals.output(id),
        waitForTerminalExit: (id) => terminals.waitForExit(id),
        killTerminal: (id) => {
          terminals.kill(id);
        },
        releaseTerminal: (id) => {
          terminals.release(id);
        },
      },
      close: () => {
        terminals.closeAll();
      },
    };
  };
}

/** The ports of the host's services: its tools' catalogue, sandbox backends and undo store. */
export function servePorts(deps: {
  base: Pick<HostBase, 'lua' | 'notify' | 'sandboxBackends'>;
  catalogue: PreparePorts['catalogue'];
  undo: ServePorts['undo'] & NonNullable<PreparePorts['undo']>;
}): ServePorts {
  const warned = new Set<string>();
  const home = homedir();
  return {
    prepare: {
      catalogue: deps.catalogue,
      sandbox: sandboxResolver(deps.base.sandboxBackends, deps.base.lua, home),
      // Only built-in tools serve an agent: none runs in Lua.
      lua: { setSandbox: () => undefined, runsInLua: () => false },
      undo: deps.undo,
      warnOnce: (key, message) => {
        if (warned.has(key)) return;
        warned.add(key);
        deps.base.notify.warn(message);
      },
      home,
      env: process.env,
    },
    lua: deps.base.lua,
    undo: deps.undo,
    home,
    env: process.env,
  };
}
