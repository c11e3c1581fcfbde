// A fake ACP agent for tests, built with the SDK's agent side: `node fake-acp-agent.mjs SCRIPT`.
// SCRIPT is a JSON file:
//   { "log": "/path/log.jsonl",        what it received, one JSON object a line
//     "loadSession": true,             it says it can load sessions (default false)
//     "authRequired": true,            session/new fails with -32000 until `authenticate`
//     "initializeDelay": 1500,         answers `initialize` that many ms late
//     "turns": [ { "match": "word", "steps": [ … ] }, … ] }
// A prompt runs the steps of the first turn whose `match` is in the text of its last block (a
// turn without `match` matches any; a transcript sent before the message is not looked at). Steps:
//   { "update": <SessionUpdate> }           a session/update notification
//   { "permission": { "toolCall": …, "options": […] } }   session/request_permission; the
//                                           outcome is logged
//   { "chunks": n, "text": "…" }            n agent_message_chunk updates of `text`
//                                           (`texts`: a list taken in turn); then logs
//                                           `chunks-sent` with the time (ms since the epoch)
//   { "crash": code }                       exits at once with `code`
//   { "waitCancel": true }                  waits for session/cancel; the turn ends `cancelled`
//   { "stop": "end_turn" }                  the stop reason (default end_turn)
//   { "answerUsage": { "inputTokens": … } } the `usage` of the prompt's answer (a
//                                           `usage_update` is an `update` step)
//   { "permissions": [ { "toolCall": … }, … ] }   several session/request_permission at once;
//                                           waits for every answer (each outcome logged);
//                                           with "crashOnAnswer": code, exits at the first
// The client's file and terminal methods (each logs what came back, `error` when it failed; a
// path or `cwd` starting with `$CWD` starts in the agent's working directory):
//   { "readFile": { "path": …, "line": n, "limit": n } }     fs/read_text_file → `readFile`
//   { "writeFile": { "path": …, "content": "…" } }           fs/write_text_file → `writeFile`
//   { "terminal": { "command": …, "args": […], "cwd": …, "outputByteLimit": n, "kill": true } }
//                                           terminal/create, then (with `kill`) terminal/kill,
//                                           wait_for_exit, output, release → `terminal`
import { appendFileSync, readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';

const script = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const log = (entry) => {
  if (script.log) appendFileSync(script.log, JSON.stringify(entry) + '\n');
};
log({
  event: 'started',
  pid: process.pid,
  cwd: process.cwd(),
  env: process.env.FAKE_AGENT_ENV ?? null,
});

let authenticated = !script.authRequired;
let sessions = 0;
/** The cancel of the turn that waits for one. */
let cancelled;
/** The `usage` the running turn's answer carries (an `answerUsage` step). */
let answerUsage;

const DEFAULT_OPTIONS = [
  { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'allow-always', name: 'Always allow', kind: 'allow_always' },
  { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
];

function promptText(prompt) {
  return prompt.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

/** What a client method answered, or its error. */
async function answerOf(work) {
  try {
    return { answer: await work };
  } catch (error) {
    return { error: { code: error.code, message: error.message } };
  }
}

/** `$CWD` at the start of a path: the agent's working directory (the chat's directory). */
const here = (path) => (typeof path === 'string' ? path.replace(/^\$CWD/, process.cwd()) : path);

async function fileStep(client, sessionId, step) {
  const { fs } = acp.methods.client;
  for (const request of [step.readFile, step.writeFile]) {
    if (request) request.path = here(request.path);
  }
  if (step.readFile) {
    const got = await answerOf(client.request(fs.readTextFile, { sessionId, ...step.readFile }));
    log({
      event: 'readFile',
      path: step.readFile.path,
      content: got.answer?.content,
      error: got.error,
    });
  } else {
    const got = await answerOf(client.request(fs.writeTextFile, { sessionId, ...step.writeFile }));
    log({
      event: 'writeFile',
      path: step.writeFile.path,
      ok: got.error === undefined,
      error: got.error,
    });
  }
}

async function terminalStep(client, sessionId, step) {
  const { terminal } = acp.methods.client;
  const { kill, ...params } = step.terminal;
  if (params.cwd) params.cwd = here(params.cwd);
  const created = await answerOf(client.request(terminal.create, { sessionId, ...params }));
  if (created.error) {
    log({ event: 'terminal', error: created.error });
    return;
  }
  const terminalId = created.answer.terminalId;
  if (kill) await client.request(terminal.kill, { sessionId, terminalId });
  const exit = await client.request(terminal.waitForExit, { sessionId, terminalId });
  const output = await client.request(terminal.output, { sessionId, terminalId });
  await client.request(terminal.release, { sessionId, terminalId });
  log({ event: 'terminal', terminalId, exit, ...output });
}

// Permission requests: one, or several at once (`permissions`).
async function askPermission(client, sessionId, ask) {
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: ask.toolCall,
    options: ask.options ?? DEFAULT_OPTIONS,
  });
  log({ event: 'permission', toolCallId: ask.toolCall.toolCallId, outcome: answer.outcome });
}

async function runStep(client, sessionId, step) {
  if (step.readFile || step.writeFile) {
    await fileStep(client, sessionId, step);
  } else if (step.terminal) {
    await terminalStep(client, sessionId, step);
  } else if (step.update) {
    await client.notify(acp.methods.client.session.update, { sessionId, update: step.update });
  } else if (step.chunks) {
    const texts = step.texts ?? [step.text];
    for (let i = 0; i < step.chunks; i++) {
      await client.notify(acp.methods.client.session.update, {
        sessionId,
        update: {
          sessionUpdate: 'agent_message_chunk',
          content: { type: 'text', text: texts[i % texts.length] },
        },
      });
    }
    // When the last one was written (a clock other processes share, for benchmarks).
    log({ event: 'chunks-sent', at: performance.timeOrigin + performance.now() });
  } else if (step.permission) {
    await askPermission(client, sessionId, step.permission);
  } else if (step.permissions) {
    await Promise.all(
      step.permissions.map(async (ask) => {
        await askPermission(client, sessionId, ask);
        if (step.crashOnAnswer !== undefined) process.exit(step.crashOnAnswer);
      }),
    );
  } else if (step.answerUsage) {
    answerUsage = step.answerUsage;
  } else if (step.crash !== undefined) {
    process.exit(step.crash);
  } else if (step.waitCancel) {
    await new Promise((resolve) => {
      cancelled = resolve;
    });
    return 'cancelled';
  }
  return step.stop;
}

const app = acp
  .agent({ name: 'fake-agent' })
  .onRequest(acp.methods.agent.initialize, async ({ params }) => {
    log({ event: 'initialize', params });
    if (script.initializeDelay) {
      await new Promise((resolve) => setTimeout(resolve, script.initializeDelay));
    }
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: script.loadSession === true,
        promptCapabilities: { embeddedContext: true },
      },
      agentInfo: { name: 'fake-agent', version: '1.2.3' },
      authMethods: script.authRequired ? [{ id: 'key', name: 'API key' }] : [],
    };
  })
  .onRequest(acp.methods.agent.authenticate, ({ params }) => {
    log({ event: 'authenticate', params });
    authenticated = true;
    return {};
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    if (!authenticated) throw new acp.RequestError(-32000, 'Authentication required');
    const sessionId = `session-${process.pid}-${++sessions}`;
    log({ event: 'session/new', cwd: params.cwd, sessionId });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.load, ({ params }) => {
    log({ event: 'session/load', sessionId: params.sessionId, cwd: params.cwd });
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    log({ event: 'cancel', sessionId: params.sessionId });
    cancelled?.();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const text = promptText(params.prompt);
    log({ event: 'prompt', sessionId: params.sessionId, text, prompt: params.prompt });
    const last = promptText(params.prompt.slice(-1));
    const turn = (script.turns ?? []).find((t) => t.match === undefined || last.includes(t.match));
    let stopReason = 'end_turn';
    answerUsage = undefined;
    for (const step of turn?.steps ?? [
      { update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'OK' } } },
    ]) {
      const stop = await runStep(client, params.sessionId, step);
      if (stop !== undefined) stopReason = stop;
      if (stop === 'cancelled') break;
    }
    return answerUsage === undefined ? { stopReason } : { stopReason, usage: answerUsage };
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
// The client went away (its stdin closed): end, as real agents do.
connection.closed.then(() => process.exit(0));
