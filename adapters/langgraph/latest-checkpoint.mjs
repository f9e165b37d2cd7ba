// latest-checkpoint.mjs reads a thread's latest checkpoint from a SqliteSaver database as plain
// JSON, with nothing but better-sqlite3: what a --dump-state command needs, without the half
// second LangChain's modules take to load (chaoskit runs it once per case).
import Database from 'better-sqlite3';

/**
 * Returns the latest checkpoint of the thread, as SqliteSaver's getTuple finds it (the greatest
 * checkpoint id in the root namespace), with its checkpoint and metadata parsed but not revived:
 * LangChain objects (messages) stay in their serialized form, {lc, type: 'constructor', id,
 * kwargs}. Returns null when the database or the thread has no checkpoint.
 * @param {string} file the database
 * @param {string} thread the thread id
 * @returns {{checkpointId: string, checkpoint: any, metadata: any} | null}
 */
export function latestCheckpoint(file, thread) {
  let db;
  try {
    // Read-write, as SQLite must be to roll back a hot journal a crash left.
    db = new Database(file, { fileMustExist: true });
  } catch (err) {
    if (err.code === 'SQLITE_CANTOPEN') return null;
    throw err;
  }
  try {
    const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'").get();
    if (!table) return null;
    const row = db.prepare(`SELECT checkpoint_id, type, checkpoint, metadata FROM checkpoints
      WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`).get(thread);
    if (!row) return null;
    if (row.type !== 'json') throw new Error(`latest-checkpoint: checkpoint ${row.checkpoint_id} is of type ${row.type}, not json`);
    const text = (b) => (Buffer.isBuffer(b) ? b.toString('utf8') : String(b));
    return { checkpointId: row.checkpoint_id, checkpoint: JSON.parse(text(row.checkpoint)), metadata: JSON.parse(text(row.metadata)) };
  } finally {
    db.close();
  }
}

/**
 * Returns a serialized LangChain message ({lc, type: 'constructor', id: [..., 'AIMessage'],
 * kwargs}) as {type, content, tool_calls?, name?, status?}: what a message says, without its
 * ids (the message's own, random unless set, and the tool-call ids a model draws).
 * @param {any} m
 */
export function plainMessage(m) {
  const cls = m?.id?.at(-1) ?? '';
  const k = m?.kwargs ?? {};
  const type = { HumanMessage: 'human', AIMessage: 'ai', SystemMessage: 'system', ToolMessage: 'tool' }[cls] ?? cls;
  const out = { type, content: k.content };
  if (k.tool_calls?.length) out.tool_calls = k.tool_calls.map((c) => ({ name: c.name, args: c.args }));
  if (type === 'tool') Object.assign(out, { name: k.name, status: k.status });
  return out;
}
