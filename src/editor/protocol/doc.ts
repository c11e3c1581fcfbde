// The table of docs/rpc.md, made from the protocol (`./index.ts`): `npm run docs:rpc` writes
// it between the markers, and a unit test fails when the page and the protocol differ. The host
// does not import it.
import {
  CALL,
  CALL_DOC,
  HOST_TO_LUA,
  type HostToLuaKind,
  LUA_TO_HOST,
  type LuaToHostKind,
} from './index.js';

export const TABLE_BEGIN =
  '<!-- protocol table: made by `npm run docs:rpc` from src/editor/protocol/ -->';
export const TABLE_END = '<!-- end of the protocol table -->';

const LUA_KINDS: Record<LuaToHostKind, string> = {
  request: 'request (the only one allowed)',
  call: '`call`',
  notification: 'notification',
  'notification or call': 'notification (or `call`)',
};

const HOST_KINDS: Record<HostToLuaKind, string> = {
  request: 'request',
  notification: 'notification',
  'request or notification': 'request or notification',
};

interface Row {
  direction: string;
  method: string;
  kind: string;
  params: string;
  answer: string;
  section?: string;
}

function line(row: Row): string {
  const name = `\`${row.method}\``;
  const method = row.section === undefined ? name : `[${name}](#${row.section})`;
  return `| ${row.direction} | ${method} | ${row.kind} | ${row.params} | ${row.answer} |`;
}

/** Every method of the protocol, in its order, with the anchor of its section (if it has one). */
export function protocolRows(): Row[] {
  const rows: Row[] = [];
  for (const [method, spec] of Object.entries(LUA_TO_HOST)) {
    rows.push({ direction: 'Lua → host', method, ...spec, kind: LUA_KINDS[spec.kind] });
  }
  rows.push({ direction: 'Lua → host', method: CALL, kind: 'notification', ...CALL_DOC });
  for (const [method, spec] of Object.entries(HOST_TO_LUA)) {
    rows.push({ direction: 'host → Lua', method, ...spec, kind: HOST_KINDS[spec.kind] });
  }
  return rows;
}

/** The table, markers included. */
export function protocolTable(): string {
  return [
    TABLE_BEGIN,
    '',
    '| Direction | Method | Kind | Params | Answer |',
    '| --- | --- | --- | --- | --- |',
    ...protocolRows().map(line),
    '',
    TABLE_END,
  ].join('\n');
}

/** `page` with its table replaced by the protocol's; undefined when the page has no markers. */
export function withProtocolTable(page: string): string | undefined {
  const begin = page.indexOf(TABLE_BEGIN);
  const end = page.indexOf(TABLE_END);
  if (begin < 0 || end < begin) return undefined;
  return page.slice(0, begin) + protocolTable() + page.slice(end + TABLE_END.length);
}
