// langgraph-support.mjs: what the support team's two LangGraph.js programs share (the refund agent,
// langgraph-agent.mjs, and the refund workflow, langgraph-deploy.mjs): their checkpointer, where
// their MCP server is, and how they read a tool's result.
import path from 'node:path';

/** The checkpointer's database in the state directory. */
const DB = 'checkpoints.db';

/**
 * The checkpointer: SqliteSaver on checkpoints.db in dir, on a connection with synchronous =
 * FULL. SqliteSaver switches the database to WAL, in which better-sqlite3's default (NORMAL)
 * does not fsync a commit, and a power cut takes committed checkpoints back
 * (docs/findings/langgraphjs-sqlitesaver-wal-normal.md).
 */
export async function openSaver(dir) {
  const { default: Database } = await import('better-sqlite3');
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite');
  const db = new Database(path.join(dir, DB));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return new SqliteSaver(db);
}

/**
 * The support tools' MCP server: SUPPORT_MCP_URL, else CHAOSKIT_MCP_URL. With neither, the
 * program says so and exits with status 2.
 */
export function supportMcpUrl() {
  const url = process.env.SUPPORT_MCP_URL || process.env.CHAOSKIT_MCP_URL;
  if (!url) {
    console.error(`${path.basename(process.argv[1], '.mjs')}: CHAOSKIT_MCP_URL is not set`);
    process.exit(2);
  }
  return url;
}

/** The id a tool's result names ({"id":...} as text, or in an MCP content block), else the result. */
export function resultId(content) {
  if (typeof content === 'object') return resultId(JSON.stringify(content));
  try {
    const doc = JSON.parse(content);
    if (doc?.id) return doc.id;
    if (Array.isArray(doc) && doc.length === 1) return resultId(doc[0]);
    if (doc?.type === 'text') return resultId(doc.text); // an MCP content block
  } catch {
    // not JSON: the text itself
  }
  return content;
}
