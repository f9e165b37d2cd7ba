// langgraph-deploy.mjs: a refund workflow on LangGraph.js, in two versions, to test a deploy in
// the middle of a run; nothing in it knows chaoskit. Version 1 is a StateGraph of three nodes,
// each calling one of the support team's MCP tools: lookup (get_order) → refund (issue_refund)
// → notify (email_customer). Version 2 adds an approval step before the money moves: lookup →
// approve (approve_refund) → refund → notify, and its refund node refuses an order that has no
// approval, as a team adding an approval step writes it.
//
//	node langgraph-deploy.mjs                             version 1: run (or resume) the refund
//	node langgraph-deploy.mjs --version 2                 version 2, migrating v1's threads
//	node langgraph-deploy.mjs --version 2 --no-migration  buggy: v2 without the migration
//	node langgraph-deploy.mjs --version 2 --rename        buggy: v2 also renames notify to email
//	node langgraph-deploy.mjs --dump-state                print the durable state (connects nowhere)
//
// Environment: SUPPORT_MCP_URL (the support tools' MCP server; CHAOSKIT_MCP_URL when unset),
// STATE_DIR or CHAOSKIT_STATE_DIR.
//
// # What LangGraph does with a thread version 1 checkpointed
//
// A process of version 2 compiles its own graph and resumes the thread with invoke(null), as any
// restart does. LangGraph schedules the nodes of the new graph whose trigger channels were
// written since they last ran (docs/findings/langgraphjs-graph-upgrade.md, with the source):
//   - a thread version 1 left past lookup has lookup's write to "branch:to:refund" (its edge in
//     version 1) and goes on with refund: version 2's approve never runs for it;
//   - a node of the old graph the new one no longer has (renamed) is never scheduled: a thread
//     that was about to enter it ends there, and getState says nothing is left to run.
//
// # The migration (version 2)
//
// Before resuming, version 2 looks at the thread: an order looked up but neither approved nor
// refunded is a thread version 1 left between lookup and refund. It writes to the thread as
// lookup (updateState with asNode "lookup"), which makes the new graph's edge from lookup the
// next step: approve, then refund. A thread already refunded by version 1 is left to finish as
// version 1 would (the customer is emailed; the refund was made without the new approval).
//
// # The buggy twins
//
//	--no-migration  a thread version 1 left between lookup and refund reaches version 2's refund
//	                without an approval, which refuses it: the run fails at every restart.
//	--rename        version 2 renames the node notify to email (with the migration): a thread
//	                version 1 left before notify ends without emailing the customer.
//
// # Keys and checkpoints
//
// Each tool that changes something gets idempotency_key = thread and tool
// (`RR-7731:issue_refund`): the same in both versions, so a refund made by version 1 and asked
// again by version 2 is one refund. Checkpoints: SqliteSaver on checkpoints.db in the state
// directory, synchronous = FULL (langgraph-support.mjs), durability "sync" (see
// langgraph-agent.mjs).
import { stateDir } from './checkpoint.mjs';
import { openSaver, resultId, supportMcpUrl } from './langgraph-support.mjs';

/** The refund request this workflow carries out, on its own thread. */
const REQUEST = { thread: 'RR-7731', order: 'ORD-5521', amount: 89.9, to: 'dana@example.com' };

const argv = process.argv.slice(2);
const flags = new Set(argv);
const version = argv.includes('--version') ? Number(argv[argv.indexOf('--version') + 1]) : 1;
if (version !== 1 && version !== 2) {
  console.error(`langgraph-deploy: --version ${argv[argv.indexOf('--version') + 1]}: want 1 or 2`);
  process.exit(2);
}
const migrate = version === 2 && !flags.has('--no-migration');
const notifyNode = version === 2 && flags.has('--rename') ? 'email' : 'notify';
const stepKeys = flags.has('--step-keys');

if (flags.has('--dump-state')) {
  await dumpState();
} else {
  await main();
}

async function main() {
  const { StateGraph, Annotation, START, END } = await import('@langchain/langgraph');
  const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');

  const mcp = new MultiServerMCPClient({
    mcpServers: {
      support: { url: supportMcpUrl(), automaticSSEFallback: false },
    },
  });
  try {
    const tools = Object.fromEntries((await mcp.getTools()).map((t) => [t.name, t]));
    /**
     * Calls tool name with args, from a node run with config, adding its key unless it takes
     * none, and returns the id its result names.
     */
    const call = async (config, name, args, keyed = true) => {
      const key = stepKeys ? `${REQUEST.thread}:${name}@${config.metadata.langgraph_step}` : `${REQUEST.thread}:${name}`;
      return resultId(await tools[name].invoke(keyed ? { ...args, idempotency_key: key } : args));
    };

    // The state: what each step found or did, by the id its tool returned.
    const State = Annotation.Root({
      order_id: Annotation(),
      approval_id: Annotation(),
      refund_id: Annotation(),
      email_id: Annotation(),
    });
    let graph = new StateGraph(State)
      .addNode('lookup', async (state, config) => ({ order_id: await call(config, 'get_order', { order_id: REQUEST.order }, false) }))
      .addNode('refund', async (state, config) => {
        if (version === 2 && !state.approval_id) throw new Error(`refund of ${REQUEST.order}: not approved`);
        return { refund_id: await call(config, 'issue_refund', { order_id: REQUEST.order, amount_usd: REQUEST.amount, reason: 'arrived broken' }) };
      })
      .addNode(notifyNode, async (state, config) => ({
        email_id: await call(config, 'email_customer', {
          order_id: REQUEST.order,
          to: REQUEST.to,
          subject: 'Your refund',
          body: `We refunded ${REQUEST.amount} USD for ${REQUEST.order} (${state.refund_id}).`,
        }),
      }))
      .addEdge(START, 'lookup');
    if (version === 2) {
      graph = graph
        .addNode('approve', async (state, config) => ({
          approval_id: await call(config, 'approve_refund', { order_id: REQUEST.order, amount_usd: REQUEST.amount }),
        }))
        .addEdge('lookup', 'approve')
        .addEdge('approve', 'refund');
    } else {
      graph = graph.addEdge('lookup', 'refund');
    }
    graph = graph.addEdge('refund', notifyNode).addEdge(notifyNode, END);

    const app = graph.compile({ checkpointer: await openSaver(stateDir()) });
    const config = { configurable: { thread_id: REQUEST.thread }, durability: 'sync' };
    const saved = await app.getState(config);
    const started = saved.createdAt !== undefined; // the thread has a checkpoint
    // Finished: nothing left to run. Not `next`, which leaves out a task whose writes were saved
    // before its step's checkpoint was (it is in `tasks`, and the thread is not done).
    if (started && saved.tasks.length === 0) return;
    if (started && migrate && saved.values.order_id && !saved.values.approval_id && !saved.values.refund_id) {
      await app.updateState(config, {}, 'lookup'); // a v1 thread between lookup and refund: approve next
    }
    await app.invoke(started ? null : {}, config);
  } finally {
    await mcp.close();
  }
}

/**
 * Prints the thread's latest checkpoint as the oracle compares it: the state's values (what
 * each step found or did), the same in both versions, and done once the customer is emailed.
 */
async function dumpState() {
  const saver = await openSaver(stateDir());
  const tuple = await saver.getTuple({ configurable: { thread_id: REQUEST.thread } });
  if (!tuple) {
    process.stdout.write(JSON.stringify({ status: 'not-started' }) + '\n');
    return;
  }
  const { order_id, approval_id, refund_id, email_id } = tuple.checkpoint.channel_values;
  const status = email_id ? 'done' : 'running';
  process.stdout.write(JSON.stringify({ thread: REQUEST.thread, status, order_id, approval_id, refund_id, email_id }) + '\n');
}
