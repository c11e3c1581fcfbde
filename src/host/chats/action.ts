// `chats:list` (`:Flemma chats`, docs/picker.md): the listing of `./lister.ts` (with what the
// usage ledger sums per chat) and the cost of this host's requests the ledger does not hold,
// each chat as the line the picker shows.
import { homedir } from 'node:os';
import { relative, sep } from 'node:path';
import { entryLine } from '../../core/chats/summary.js';
import type { RequestRecord } from '../../core/usage/session.js';
import type { ChatRow, ChatsListParams } from '../../editor/protocol/chats.js';
import type { ChatLister } from './lister.js';

/** What the costs come from besides the ledger: the session of this host's completed requests. */
interface CostSource {
  session: { requests(): readonly RequestRecord[] };
  /** Whether the ledger holds the request. */
  inLedger(record: RequestRecord): boolean;
}

/** USD per chat file (its real path), over the requests that have a price and no ledger line. */
function costsOf(source: CostSource): Map<string, number> {
  const costs = new Map<string, number>();
  for (const record of source.session.requests()) {
    if (record.filepath === undefined || record.cost === undefined) continue;
    if (source.inLedger(record)) continue;
    costs.set(record.filepath, (costs.get(record.filepath) ?? 0) + record.cost);
  }
  return costs;
}

/** A path as shown: relative to `cwd` when below it, else with `~` for the home directory. */
function shownPath(path: string, cwd: string | undefined): string {
  if (cwd !== undefined) {
    const rel = relative(cwd, path);
    if (rel !== '' && !rel.startsWith('..')) return rel;
  }
  const home = homedir();
  return path.startsWith(home + sep) ? `~${path.slice(home.length)}` : path;
}

export async function listChats(
  ctx: { chats: ChatLister; usage: CostSource },
  params: ChatsListParams,
): Promise<{ chats: ChatRow[]; read: number }> {
  const listing = await ctx.chats.list(params, costsOf(ctx.usage));
  const now = Date.now();
  const chats = listing.chats.map((entry) => ({
    path: entry.path,
    line: entryLine(entry, shownPath(entry.path, params.cwd), now),
  }));
  return { chats, read: listing.read };
}
