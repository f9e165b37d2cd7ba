// restock.mjs is a LangGraph.js agent under chaoskit: a StateGraph that restocks a warehouse.
//
//   check_stock    reads the stock levels with the read-only tool check_inventory
//   plan           asks the model, which answers with a create_po tool call per item below its
//                  reorder point
//   place_orders   a ToolNode: runs those calls; create_po files a purchase order (the effect)
//   report         asks the model for a summary of the orders filed
//
// Its state is checkpointed by LangGraph's SqliteSaver in CHAOSKIT_STATE_DIR (see
// ../chaoskit-langgraph.mjs), and a process that starts on a thread with a checkpoint resumes it
// with invoke(null). Run it under chaoskit, from this directory:
//
//   chaoskit run --exec 'node restock.mjs' --disk fuse --state 'node restock.mjs --dump-state' \
//     --tool check_inventory=read-only --tool create_po=idempotent-by-key,latency=1s \
//     --faults kill,power,torn,diskfull
//
// Flags choose the configuration, to compare them (the defaults are the correct one):
//   --durability sync|async|exit   LangGraph's durability mode (invoke's option; LangGraph's own
//                                  default is async)
//   --key step|tool-call-id|task-id|none
//                                  the idempotency key of create_po (see stepKey)
//   --journal delete|wal           the checkpointer's journal: delete, or wal as SqliteSaver sets it
//   --synchronous EXTRA|FULL|NORMAL
//   --saver-order serial|put-first|langgraph
//                                  in which order the checkpointer writes a node's writes and the
//                                  checkpoint after it (see ChaoskitSqliteSaver); serial by default
//   --restart-input                invoke with the input on every start, also on a thread that
//                                  has a checkpoint (a common mistake: it starts the run again)
//   --no-retry                     call each tool once and let ToolNode handle an error (by
//                                  default it turns it into an error message for the model)
//   --wall-clock-ids               leave LangGraph's ids to the wall clock and crypto's randomness
//                                  (by default reproducibleIds() draws them from chaoskit's
//                                  virtual clock and seeded source): the checkpoint ids, and the
//                                  task ids made from them, differ from run to run
//   --thread ID                    the thread (default restock-1)
//   --log-nodes FILE               append "ATTEMPT start" to FILE as the process starts, and
//                                  "ATTEMPT NODE" as each node starts (streaming the graph's
//                                  tasks): which nodes a restart runs again
//   --dump-state                   print the thread's checkpointed state as JSON and exit
import process from 'node:process';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: {
    durability: { type: 'string', default: 'sync' },
    key: { type: 'string', default: 'step' },
    journal: { type: 'string', default: 'delete' },
    synchronous: { type: 'string' },
    'saver-order': { type: 'string', default: 'serial' },
    'restart-input': { type: 'boolean', default: false },
    'no-retry': { type: 'boolean', default: false },
    'wall-clock-ids': { type: 'boolean', default: false },
    thread: { type: 'string', default: 'restock-1' },
    'log-nodes': { type: 'string' },
    'dump-state': { type: 'boolean', default: false },
  },
});
if (!['sync', 'async', 'exit'].includes(flags.durability)) usage(`--durability ${flags.durability}`);
if (!['step', 'tool-call-id', 'task-id', 'none'].includes(flags.key)) usage(`--key ${flags.key}`);
if (!['delete', 'wal'].includes(flags.journal)) usage(`--journal ${flags.journal}`);
if (!['serial', 'put-first', 'langgraph'].includes(flags['saver-order'])) usage(`--saver-order ${flags['saver-order']}`);

/** The warehouse: what it holds, and below what an item is reordered, how much, from whom. */
const ITEMS = [
  { sku: 'laptop-14', onHand: 3, reorderAt: 10, qty: 40, vendor: 'acme', usd: 84000 },
  { sku: 'monitor-27', onHand: 25, reorderAt: 10, qty: 20, vendor: 'globex', usd: 6000 },
  { sku: 'chair-ergo', onHand: 4, reorderAt: 8, qty: 25, vendor: 'initech', usd: 6500 },
];

const REQUEST = 'Restock the Berlin warehouse: order every item below its reorder point.';

if (flags['dump-state']) {
  await dumpState();
} else {
  await main();
}

async function main() {
  if (flags['log-nodes']) {
    // Before anything else: a process killed at its first beat is in the log too.
    (await import('node:fs')).appendFileSync(flags['log-nodes'], `${process.env.CHAOSKIT_PROCESS ?? '-'} start\n`);
  }
  const lg = await import('../chaoskit-langgraph.mjs');
  const { StateGraph, Annotation, MessagesAnnotation, START, END } = await import('@langchain/langgraph');
  const { ToolNode } = await import('@langchain/langgraph/prebuilt');
  const { HumanMessage, SystemMessage, isAIMessage } = await import('@langchain/core/messages');
  const { z } = await import('zod');

  let ck;
  try {
    ck = await lg.connect();
  } catch (err) {
    if (!(err instanceof lg.NotUnderChaoskit)) throw err;
    console.error(`restock: ${err.message}; run it with chaoskit run --exec 'node restock.mjs' (see ../README.md)`);
    process.exit(2);
  }
  // LangGraph's checkpoint ids (and its task ids, made from them) from chaoskit's virtual clock
  // and seeded source, so that two runs make the same ones.
  if (!flags['wall-clock-ids']) await lg.reproducibleIds(ck);
  const retry = !flags['no-retry'];

  // The tools: a read-only look-up, and the purchase order, the effect chaoskit counts.
  const checkInventory = lg.chaoskitTool(ck, {
    name: 'check_inventory',
    description: 'Reads the stock levels of the given items.',
    schema: z.object({ skus: z.array(z.string()) }),
    scheme: 'none', // read-only: nothing to deduplicate
    retry,
    result: ({ skus }, reply) => ({
      snapshot: reply.id,
      items: ITEMS.filter((i) => skus.includes(i.sku)).map(({ sku, onHand, reorderAt }) => ({ sku, onHand, reorderAt })),
    }),
  });
  const createPo = lg.chaoskitTool(ck, {
    name: 'create_po',
    description: 'Files a purchase order with a vendor.',
    schema: z.object({ sku: z.string(), qty: z.number(), vendor: z.string(), usd: z.number() }),
    scheme: flags.key,
    retry,
    result: (args, reply) => `PO ${reply.id}: ${args.qty} x ${args.sku} from ${args.vendor}, $${args.usd}`,
  });

  // The model: scripted. Asked to plan, it orders what is below its reorder point; asked to
  // report, it lists the orders the tools filed.
  const model = new lg.ChaoskitChatModel({
    ck,
    script: (messages) => {
      const last = messages.at(-1);
      if (last.getType() === 'system' && last.content.startsWith('Stock:')) {
        const stock = JSON.parse(last.content.slice('Stock:'.length));
        return {
          content: '',
          tool_calls: ITEMS.filter((i) => stock.some((s) => s.sku === i.sku && s.onHand < s.reorderAt))
            .map(({ sku, qty, vendor, usd }) => ({ name: 'create_po', args: { sku, qty, vendor, usd } })),
        };
      }
      const filed = messages.filter((m) => m.getType() === 'tool').map((m) => m.content);
      return { content: `Filed ${filed.length} purchase orders. ${filed.join('; ')}` };
    },
  }).bindTools([createPo]);

  const State = Annotation.Root({
    ...MessagesAnnotation.spec,
    stock: Annotation({ reducer: (_, b) => b, default: () => [] }),
    summary: Annotation({ reducer: (_, b) => b, default: () => '' }),
  });

  const graph = new StateGraph(State)
    .addNode('check_stock', async (state, config) => {
      const found = await checkInventory.invoke({ skus: ITEMS.map((i) => i.sku) }, config);
      return { stock: found.items };
    })
    .addNode('plan', async (state, config) => {
      const stock = new SystemMessage(`Stock:${JSON.stringify(state.stock)}`);
      return { messages: [await model.invoke([...state.messages, stock], config)] };
    })
    .addNode('place_orders', new ToolNode([createPo]))
    .addNode('report', async (state, config) => {
      const summary = await model.invoke(state.messages, config);
      return { messages: [summary], summary: summary.content };
    })
    .addEdge(START, 'check_stock')
    .addEdge('check_stock', 'plan')
    .addConditionalEdges('plan', (s) => (isAIMessage(s.messages.at(-1)) && s.messages.at(-1).tool_calls?.length ? 'place_orders' : 'report'), ['place_orders', 'report'])
    .addEdge('place_orders', 'report')
    .addEdge('report', END);

  const saver = lg.openSaver(ck, { journal: flags.journal, synchronous: flags.synchronous, order: flags['saver-order'] });
  const app = graph.compile({ checkpointer: saver });
  const config = { configurable: { thread_id: flags.thread }, durability: flags.durability };
  const input = { messages: [new HumanMessage(REQUEST)] };
  const start = flags['restart-input'] ? input : await lg.resumeInput(saver, config, input);
  let out;
  if (flags['log-nodes']) {
    const fs = await import('node:fs');
    for await (const [mode, chunk] of await app.stream(start, { ...config, streamMode: ['tasks', 'values'] })) {
      if (mode === 'tasks' && 'input' in chunk) fs.appendFileSync(flags['log-nodes'], `${ck.process} ${chunk.name}\n`);
      if (mode === 'values') out = chunk;
    }
  } else {
    out = await app.invoke(start, config);
  }
  saver.db.close();
  await ck.done({ summary: out.summary, orders: out.messages.filter((m) => m.getType() === 'tool').length });
}

/**
 * Prints the thread's checkpointed state (the latest checkpoint's values) as JSON, leaving out
 * what differs from run to run by design: message ids, and the tool-call ids the model draws.
 * It reads the database with better-sqlite3 alone (../latest-checkpoint.mjs): chaoskit runs it
 * after every case, and LangChain's modules take half a second to load.
 */
async function dumpState() {
  const path = await import('node:path');
  const { latestCheckpoint, plainMessage } = await import('../latest-checkpoint.mjs');
  const t = latestCheckpoint(path.join(process.env.CHAOSKIT_STATE_DIR ?? '.', 'checkpoints.db'), flags.thread);
  if (!t) {
    process.stdout.write('null\n');
    return;
  }
  const v = t.checkpoint.channel_values ?? {};
  const state = { step: t.metadata.step, messages: (v.messages ?? []).map(plainMessage), stock: v.stock ?? [], summary: v.summary ?? '' };
  process.stdout.write(JSON.stringify(state) + '\n');
}

function usage(what) {
  console.error(`restock: unknown ${what} (see the comment at the top of restock.mjs)`);
  process.exit(2);
}
