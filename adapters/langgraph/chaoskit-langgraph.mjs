// chaoskit-langgraph.mjs is the glue between a LangGraph.js graph and chaoskit: copy it next to
// your graph (with ../process/js/chaoskit.mjs, the protocol's client) and run the graph under
// `chaoskit run --exec 'node your-graph.mjs' --disk fuse ...`. It connects three things:
//
//   - the storage: ChaoskitSqliteSaver, LangGraph's SqliteSaver on a database in
//     CHAOSKIT_STATE_DIR, kept in rollback-journal mode (SqliteSaver.setup() switches every
//     database it is given to WAL) with synchronous=EXTRA, and telling chaoskit (a progress mark)
//     each time a checkpoint or a node's writes are committed, so that chaoskit can measure
//     the work a crash loses;
//   - the tools: chaoskitTool(), a LangChain tool whose effect is a chaoskit tool call, under an
//     idempotency key stable per logical step (thread, superstep, node, the call's position in
//     the model's message), retried with that key while its outcome is unknown;
//   - the model: ChaoskitChatModel, a LangChain chat model whose answers come from a script you
//     give it, asked through chaoskit (so rate limits, server errors and hangs can be injected
//     and a re-asked model call is counted), with tool-call ids drawn as a provider's are: new
//     ones every time the model is asked.
//
// And resumeInput() says what to pass to graph.invoke: null to resume a thread that has a
// checkpoint (a non-null input starts a new run on the thread, which re-runs every node under
// new superstep numbers), the input otherwise.
//
//	const ck = await connect();
//	const saver = openSaver(ck);
//	const graph = builder.compile({ checkpointer: saver });
//	const config = { configurable: { thread_id: 'restock-1' }, durability: 'sync' };
//	const out = await graph.invoke(await resumeInput(saver, config, input), config);
//	await ck.done(out);
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, isAIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { getConfig } from '@langchain/langgraph';
import {
  AmbiguousError, DeadlineError, ModelServerError, RateLimitedError, TimeoutError, TransientError,
} from '../process/js/chaoskit.mjs';

export * from '../process/js/chaoskit.mjs';

/** The database's file name in the state directory. */
export const DATABASE = 'checkpoints.db';

/** How many times a tool or model call whose outcome is open is made before giving up. */
export const TRIES = 5;

/**
 * LangGraph's SqliteSaver, made fit for a power cut and telling chaoskit when progress is
 * durable.
 *
 * SqliteSaver.setup() runs `PRAGMA journal_mode=WAL` on whatever database it is given. In WAL
 * mode better-sqlite3 commits with synchronous=NORMAL (its build default), which does not fsync
 * a commit: a power cut takes the last checkpoints away. And WAL's index is a shared memory map
 * whose pages reach the disk when the kernel chooses, which makes the file operations of two runs
 * differ. So unless journal is 'wal', setup() here skips that one pragma and the database stays
 * in the mode openSaver set: DELETE (a rollback journal) with synchronous=EXTRA. (FULL is not
 * enough: a commit ends by unlinking the journal, FULL does not fsync the directory after, and a
 * power cut then brings the journal back, which rolls the committed checkpoint back.)
 *
 * With a chaoskit client, each put (a checkpoint) and putWrites (a node's writes) marks progress
 * once its transaction has committed: `checkpoint THREAD step N` and `NODE done THREAD step N`.
 * Those are the points after which a crash no longer re-runs that work.
 *
 * In which order the writes reach the database is an option (order), because LangGraph.js does
 * not fix it: a superstep's checkpoint (put) is chained only after the previous put and the
 * writes of delta channels (PregelLoop._checkpointerPutAfterPrevious in
 * @langchain/langgraph 1.7.3, dist/pregel/loop.js), not after the writes of the nodes that just
 * finished (putWrites), and in "sync" durability the loop then waits for both. Which of the two
 * lands first decides what a crash between them leaves: the node's writes, replayed on resume,
 * or nothing, and the node runs again (langchain-ai/langgraph#8039, for Python). The orders:
 *   - 'serial' (the default): one write at a time, each with its mark, in the order LangGraph
 *     calls them. LangGraph calls a node's putWrites before the put after it, so this is the
 *     node's writes first: the order SqliteSaver's own promises produce in the call pattern
 *     chaoskit-langgraph.test.mjs checks, and the one langchain-ai/langgraph#8055 (closed
 *     unmerged) proposed for Python;
 *   - 'put-first': the same, except that a node's putWrites waits until the put called after it
 *     has committed: a checkpointer whose putWrites takes longer than its put (another round
 *     trip, another connection), which LangGraph.js lets happen;
 *   - 'langgraph': no order imposed: each write, and its mark, goes when LangGraph's promises get
 *     to it. A mark then races the next write's file operations into chaoskit, so two runs'
 *     beats agree only where the marks are the only beats (a plain disk, or --beats calls).
 *
 * A write the disk has no room for (SQLITE_FULL) fails as it does with SqliteSaver: the error
 * reaches LangGraph, the run fails and the process exits, for its supervisor to restart it.
 */
export class ChaoskitSqliteSaver extends SqliteSaver {
  /** @type {import('../process/js/chaoskit.mjs').Client | undefined} */
  #ck;
  #journal;
  /** The superstep of each checkpoint this process saved or loaded, by checkpoint id. */
  #steps = new Map();

  /**
   * @param {Database.Database} db the database, its journal mode and synchronous set
   * @param {{ck?: import('../process/js/chaoskit.mjs').Client, journal?: string, order?: string}} [options]
   *   ck: the client to mark progress with (none: no marks); journal: 'wal' to let setup()
   *   switch to WAL as SqliteSaver does; order: one of ORDERS (see above)
   */
  constructor(db, { ck, journal = 'delete', order = 'serial' } = {}) {
    super(db);
    if (!ORDERS.includes(order)) throw new TypeError(`chaoskit-langgraph: unknown order ${order} (want ${ORDERS.join(', ')})`);
    this.#ck = ck;
    this.#journal = journal;
    this.#order = order;
  }

  setup() {
    if (this.isSetup || this.#journal === 'wal') {
      super.setup();
      return;
    }
    const db = this.db;
    db.pragma = (source, options) => (/^\s*journal_mode\s*=\s*wal\s*$/i.test(source)
      ? undefined
      : Database.prototype.pragma.call(db, source, options));
    try {
      super.setup();
    } finally {
      delete db.pragma;
    }
  }

  async getTuple(config) {
    // setup() (CREATE TABLE, on the first use of a database) writes too.
    const t = await super.getTuple(config);
    if (t) this.#steps.set(t.config.configurable.checkpoint_id, t.metadata?.step);
    return t;
  }

  async put(config, checkpoint, metadata, newVersions) {
    this.#steps.set(checkpoint.id, metadata?.step);
    const n = ++this.#puts;
    const write = async () => {
      const saved = await super.put(config, checkpoint, metadata, newVersions);
      await this.#ck?.mark(`checkpoint ${config.configurable?.thread_id} step ${metadata?.step}`);
      return saved;
    };
    if (this.#order === 'langgraph') return write();
    try {
      return await this.#inTurn(write);
    } finally {
      // 'put-first': the node's writes held for this put go now.
      this.#held = this.#held.filter(({ after, release }) => after >= n || release());
    }
  }

  async putWrites(config, writes, taskId, taskPath = '') {
    const failed = writes.some(([channel]) => channel === '__error__' || channel === '__interrupt__');
    const write = async () => {
      await super.putWrites(config, writes, taskId);
      // A node that failed or was interrupted has its error saved as a write too, and runs again
      // on resume: that is no progress.
      if (failed) return;
      // A pull task's path is "~__pregel_pull, NODE"; a node's name, unlike its task id (derived
      // from the checkpoint's time-based id), is the same in every run. The task ran in the
      // superstep after its checkpoint's: its langgraph_step.
      const node = taskPath.split(', ').at(-1) || taskId;
      const step = this.#steps.get(config.configurable?.checkpoint_id);
      await this.#ck?.mark(`${node} done ${config.configurable?.thread_id} step ${step === undefined ? '?' : step + 1}`);
    };
    if (this.#order === 'langgraph') return write();
    // 'put-first': wait for a put called after this to commit. A failed node's writes come with
    // no checkpoint after them: they are not held.
    if (this.#order === 'put-first' && !failed) {
      const after = this.#puts;
      await new Promise((release) => this.#held.push({ after, release }));
    }
    return this.#inTurn(write);
  }

  /** The order of the writes: one of ORDERS. */
  #order;

  /** How many puts were called. */
  #puts = 0;

  /**
   * 'put-first': the putWrites waiting for a put called after them (after: how many puts had
   * been called) to commit. @type {{after: number, release: () => void}[]}
   */
  #held = [];

  /**
   * Runs a write once the writes before it, and their marks, are done: a mark still on its way
   * to chaoskit while SQLite writes the next would race it, and two runs' beats would differ.
   * @template T
   * @param {() => Promise<T>} write
   * @returns {Promise<T>}
   */
  #inTurn(write) {
    const p = this.#turn.then(write, write);
    this.#turn = p.catch(() => {});
    return p;
  }

  /** The last write in turn. @type {Promise<unknown>} */
  #turn = Promise.resolve();
}

/** The orders in which ChaoskitSqliteSaver can write (see there). */
export const ORDERS = ['serial', 'put-first', 'langgraph'];

/**
 * Opens the checkpointer on DATABASE in the client's state directory.
 * @param {import('../process/js/chaoskit.mjs').Client | {stateDir: string}} ck the chaoskit
 *   client (its marks tell chaoskit when progress is durable), or just {stateDir} to read
 * @param {{journal?: 'delete' | 'wal', synchronous?: 'EXTRA' | 'FULL' | 'NORMAL' | 'OFF', order?: string}} [options]
 *   journal 'delete' (the default) keeps the rollback journal; 'wal' is what SqliteSaver
 *   itself does (with better-sqlite3's synchronous=NORMAL unless synchronous says otherwise).
 *   synchronous defaults to EXTRA with the rollback journal. order: in which order the writes
 *   reach the database (ORDERS; see ChaoskitSqliteSaver).
 * @returns {ChaoskitSqliteSaver}
 */
export function openSaver(ck, { journal = 'delete', synchronous, order = 'serial' } = {}) {
  const db = new Database(path.join(ck.stateDir, DATABASE));
  if (journal === 'wal') {
    db.pragma('journal_mode = WAL');
    if (synchronous) db.pragma(`synchronous = ${synchronous}`);
  } else {
    db.pragma('journal_mode = DELETE');
    db.pragma(`synchronous = ${synchronous ?? 'EXTRA'}`);
  }
  return new ChaoskitSqliteSaver(db, { ck: typeof ck.mark === 'function' ? ck : undefined, journal, order });
}

/**
 * Makes the ids LangGraph draws reproducible under chaoskit: its checkpoint ids, and the task
 * ids derived from them. LangGraph makes a checkpoint id with uuid6 from Date.now() and random
 * bytes (crypto.getRandomValues), so two runs of the same graph get other ids, and so does
 * anything derived from them: a task id (uuid5 of the checkpoint id, the step and the node), and
 * an idempotency key made of it (--key task-id), which is in chaoskit's beat trace; chaoskit then
 * refuses the run as not deterministic. After this call, in this process:
 *
 *   - Date.now() returns chaoskit's virtual time at the call (ck.now()): frozen, as virtual time
 *     moves only when chaoskit moves it. uuid6 orders the ids it makes within one millisecond by
 *     a counter, and a restarted process starts later in virtual time (a restart takes 1s of it),
 *     so a later checkpoint still has a greater id, which is how SqliteSaver finds the latest.
 *   - crypto.getRandomValues() and crypto.randomUUID() draw from a generator seeded from the
 *     process's seeded source (ck.random()): the same numbers in the golden run and the first
 *     process of every case, other ones in a restarted process, as a real restart would.
 *
 * So an id is the same in two runs that do the same, and a process that starts again makes new
 * ones, as in production. It changes globals: call it once, first thing, only under chaoskit.
 * (new Date() is left alone: LangGraph stamps checkpoints with it, and nothing compares those.)
 * @param {import('../process/js/chaoskit.mjs').Client} ck
 */
export async function reproducibleIds(ck) {
  const now = (await ck.now()).getTime();
  let s = BigInt.asUintN(64, await ck.random());
  /** splitmix64: the next 64 random bits. */
  const next = () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  };
  const fill = (bytes) => {
    for (let i = 0; i < bytes.length; i += 8) {
      let v = next();
      for (let j = i; j < Math.min(i + 8, bytes.length); j++, v >>= 8n) bytes[j] = Number(v & 0xffn);
    }
  };
  Date.now = () => now;
  const c = globalThis.crypto;
  Object.defineProperty(c, 'getRandomValues', {
    configurable: true,
    writable: true,
    value: (array) => {
      fill(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
      return array;
    },
  });
  Object.defineProperty(c, 'randomUUID', {
    configurable: true,
    writable: true,
    value: () => {
      const b = new Uint8Array(16);
      fill(b);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const h = Buffer.from(b).toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
  });
}

/**
 * Returns the input to invoke the graph with: null when the thread has a checkpoint, so that
 * LangGraph resumes it (finished nodes are not run again, and a finished thread just returns its
 * state), else input. Decide on the checkpoint, not on getState().next: after a crash under
 * durability "async" the last checkpoint saved may list no next node although the run was not
 * done.
 * @param {SqliteSaver} saver
 * @param {{configurable: {thread_id: string}}} config
 * @param {unknown} input the run's input, for a thread with no checkpoint
 */
export async function resumeInput(saver, config, input) {
  const t = await saver.getTuple({ configurable: { thread_id: config.configurable.thread_id } });
  return t ? null : input;
}

/**
 * How chaoskitTool keys a call:
 *  - 'step' (the default): THREAD:STEP:NODE:I, the thread, the superstep, the node and the call's
 *    position among its message's tool calls. A resumed thread re-runs an unfinished node under
 *    the same superstep number, in every durability mode; the same call is the same order.
 *  - 'tool-call-id': THREAD:TOOL_CALL_ID, the id the model gave the call. Stable while the
 *    model's message is durable before its tools run; not when the model is asked again.
 *  - 'task-id': LangGraph's task id, derived from the checkpoint's time-based id: it changes when
 *    the checkpoint the task started from was not saved.
 *  - 'none': no key.
 * @typedef {'step' | 'tool-call-id' | 'task-id' | 'none'} KeyScheme
 */

/**
 * Returns the idempotency key of a tool call made from a node, by scheme.
 * @param {Record<string, any>} config the tool's (or node's) runnable config
 * @param {KeyScheme} scheme
 * @param {{state?: any, toolCallId?: string}} [call] the ToolNode's runtime: the node's state
 *   and the call's id
 * @returns {string | undefined}
 */
export function stepKey(config, scheme = 'step', { state, toolCallId } = {}) {
  const thread = config.configurable?.thread_id;
  switch (scheme) {
    case 'none':
      return undefined;
    case 'task-id':
      return config.configurable?.__pregel_task_id;
    case 'tool-call-id':
      return `${thread}:${toolCallId}`;
    case 'step': {
      const { langgraph_step: step, langgraph_node: node } = config.metadata ?? {};
      return `${thread}:${step}:${node}:${callIndex(state, toolCallId)}`;
    }
    default:
      throw new TypeError(`chaoskit-langgraph: unknown key scheme ${scheme}`);
  }
}

/** The position of the tool call toolCallId in the last AI message of state, else 0. */
function callIndex(state, toolCallId) {
  const messages = state?.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (isAIMessage(messages[i])) {
      const at = (messages[i].tool_calls ?? []).findIndex((c) => c.id === toolCallId);
      return Math.max(at, 0);
    }
  }
  return 0;
}

/**
 * Makes a LangChain tool whose effect is a call of the chaoskit tool of the same name: what it
 * returns (fn's result) is built from chaoskit's reply, and the call is keyed by scheme and
 * retried, with the same key and a backoff in virtual time, while its outcome is open
 * (TransientError, AmbiguousError, TimeoutError). Use it in a ToolNode, or call it from a node
 * with tool.invoke(args, config).
 * @param {import('../process/js/chaoskit.mjs').Client} ck
 * @param {{name: string, description: string, schema: any, scheme?: KeyScheme, retry?: boolean,
 *   result?: (args: any, reply: {id: string, replayed: boolean}) => unknown}} spec
 *   retry false: call once and let the error through (to show what ToolNode does with it)
 */
export function chaoskitTool(ck, { name, description, schema, scheme = 'step', retry = true, result }) {
  return tool(async (args, runtime) => {
    const config = runtime?.config ?? runtime ?? {};
    const key = stepKey(config, scheme, { state: runtime?.state, toolCallId: runtime?.toolCallId ?? runtime?.toolCall?.id });
    const reply = await oneAtATime(ck, () => callWithRetries(ck, { tool: name, args, key }, retry ? TRIES : 1));
    return result ? result(args, reply) : JSON.stringify({ id: reply.id });
  }, { name, description, schema });
}

/** The last tool call in line, by client. @type {WeakMap<object, Promise<unknown>>} */
const lines = new WeakMap();

/**
 * Runs a tool call, retries included, once the calls started before it are done. ToolNode runs
 * a message's tool calls concurrently: were one to fail and back off, the next would overtake
 * it, and the vendor would file the orders in another order than the model gave them (and number
 * them so) than in a run without the failure.
 * @template T
 * @param {object} ck
 * @param {() => Promise<T>} call
 * @returns {Promise<T>}
 */
function oneAtATime(ck, call) {
  const p = (lines.get(ck) ?? Promise.resolve()).then(call, call);
  lines.set(ck, p.catch(() => {}));
  return p;
}

/**
 * Calls a chaoskit tool, retrying with the same key while the outcome is open.
 * @param {import('../process/js/chaoskit.mjs').Client} ck
 * @param {import('../process/js/chaoskit.mjs').Call} call
 * @param {number} tries
 */
export async function callWithRetries(ck, call, tries = TRIES) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ck.call(call);
    } catch (err) {
      const open = err instanceof TransientError || err instanceof AmbiguousError || err instanceof TimeoutError;
      if (!open || attempt >= tries) throw err;
      await ck.sleep(1000 * 2 ** attempt); // virtual time: the backoff costs nothing
    }
  }
}

/**
 * What a ChaoskitChatModel's script answers: the text, and tool calls without ids (the model
 * gives them ids).
 * @typedef {{content?: string, tool_calls?: {name: string, args: Record<string, unknown>}[]}} Scripted
 */

/**
 * A LangChain chat model whose answers are scripted and asked of chaoskit's model: each call is
 * a beat at which chaoskit can rate-limit it, fail it or hang it, and a call made again after a
 * restart is counted (model_calls_remade). Like a provider's, the tool calls it returns get new
 * ids every time it is asked (from chaoskit's seeded random source, so runs are reproducible).
 * Rate limits are waited out, server errors and hangs retried, with backoff in virtual time.
 */
export class ChaoskitChatModel extends BaseChatModel {
  /**
   * @param {{ck: import('../process/js/chaoskit.mjs').Client,
   *   script: (messages: import('@langchain/core/messages').BaseMessage[], purpose: string) => Scripted,
   *   latencyMs?: number, timeoutMs?: number}} fields
   */
  constructor(fields) {
    super({});
    this.ck = fields.ck;
    this.script = fields.script;
    this.latencyMs = fields.latencyMs ?? 2000;
    this.timeoutMs = fields.timeoutMs ?? 60000;
    this.tools = fields.tools ?? [];
  }

  _llmType() {
    return 'chaoskit';
  }

  /** Binds tools, as a provider's model does; the script decides which it calls. */
  bindTools(tools) {
    return new ChaoskitChatModel({ ck: this.ck, script: this.script, latencyMs: this.latencyMs, timeoutMs: this.timeoutMs, tools });
  }

  async _generate(messages) {
    // The purpose names the logical call: the thread, superstep and node asking.
    let cfg = {};
    try {
      cfg = getConfig() ?? {};
    } catch {
      // called outside a graph
    }
    const purpose = `${cfg.metadata?.langgraph_node ?? 'model'} ${cfg.configurable?.thread_id ?? ''} step ${cfg.metadata?.langgraph_step ?? '?'}`;
    const scripted = this.script(messages, purpose);
    const calls = [];
    for (const c of scripted.tool_calls ?? []) {
      calls.push({ name: c.name, args: c.args, id: `call_${(await this.ck.random()).toString(36)}`, type: 'tool_call' });
    }
    const reply = JSON.stringify({ content: scripted.content ?? '', tool_calls: calls });
    let text;
    for (let attempt = 1; ; attempt++) {
      try {
        text = await this.ck.model({ purpose, reply, latencyMs: this.latencyMs, timeoutMs: this.timeoutMs });
        break;
      } catch (err) {
        if (attempt >= TRIES) throw err;
        if (err instanceof RateLimitedError) await this.ck.sleep(err.retryAfterMs || 1000);
        else if (err instanceof ModelServerError || err instanceof DeadlineError) await this.ck.sleep(1000 * 2 ** attempt);
        else throw err;
      }
    }
    const answer = JSON.parse(text);
    const message = new AIMessage({ content: answer.content, tool_calls: answer.tool_calls });
    return { generations: [{ text: answer.content, message }] };
  }
}
