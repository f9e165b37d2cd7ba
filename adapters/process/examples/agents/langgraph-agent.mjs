// langgraph-agent.mjs: a refund agent built on LangGraph.js, as a team would write it; nothing in
// it knows chaoskit. A StateGraph (model node, tools node, the ReAct loop of LangGraph's docs)
// with ChatOpenAI as the model and the support team's tools from an MCP server over streamable
// HTTP (@langchain/mcp-adapters): it looks the order up, refunds the customer and emails them.
//
//	node langgraph-agent.mjs              run (or resume) the refund
//	node langgraph-agent.mjs --no-key     buggy: no idempotency keys
//	node langgraph-agent.mjs --rerun      buggy: a restart starts a new thread
//	node langgraph-agent.mjs --dump-state print the durable state as JSON (connects nowhere)
//
// Environment: OPENAI_BASE_URL and OPENAI_API_KEY (ChatOpenAI's own), SUPPORT_MCP_URL (the
// support tools' MCP server; CHAOSKIT_MCP_URL when unset), STATE_DIR or CHAOSKIT_STATE_DIR.
//
// # Checkpoint and resume
//
// LangGraph's persistence, as its docs show it: the graph is compiled with a checkpointer,
// SqliteSaver on checkpoints.db in the state directory, and invoked on a thread_id. Every
// superstep's state is saved on the thread; a process that starts on a thread with a checkpoint
// that has nodes left to run resumes it by invoking with null input ("Durable execution":
// resuming a workflow ... pass None/null as the input). Two settings make that durable, not
// just resumable:
//   - durability "sync" (invoke's option): each superstep's checkpoint is committed before the
//     next one starts. LangGraph's default, "async", writes it while the next step runs, so a
//     kill can lose the record of a step whose tools were already called;
//   - synchronous = FULL on the SQLite connection: SqliteSaver switches the database to WAL, in
//     which better-sqlite3's default (NORMAL) does not fsync a commit, and a power cut takes
//     committed checkpoints back.
//
// # Idempotency keys
//
// An MCP tool that takes an idempotency_key argument gets one derived from what a resume keeps:
// the thread id, the node and its superstep (langgraph_step), and the tool:
// `RR-7731-run1:tools@2:issue_refund`. Never the model's tool-call id, which is new each time the
// model is asked.
//
// # The buggy twins
//
//	--no-key  calls the tools without a key: a call made again after a crash refunds twice.
//	--rerun   starts a new thread (RR-7731-run2) on every restart instead of resuming the one it
//	          has: the model is asked from the start and every finished call is made again under
//	          the new thread's keys.
import { stateDir, load, save } from './checkpoint.mjs';
import { openSaver, resultId, supportMcpUrl } from './langgraph-support.mjs';

/** The refund request this agent carries out. */
const REQUEST = {
  id: 'RR-7731',
  text: 'Refund request RR-7731: order ORD-5521 arrived broken. Refund the customer in full and email them.',
};

/** The job file: which thread carries the request. */
const JOB = 'refund-job.json';

const flags = new Set(process.argv.slice(2));
const noKey = flags.has('--no-key');
const rerun = flags.has('--rerun');

if (flags.has('--dump-state')) {
  await dumpState();
} else {
  await main();
}

async function main() {
  const { StateGraph, MessagesAnnotation, START } = await import('@langchain/langgraph');
  const { toolsCondition } = await import('@langchain/langgraph/prebuilt');
  const { HumanMessage, SystemMessage } = await import('@langchain/core/messages');
  const { ChatOpenAI } = await import('@langchain/openai');
  const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');

  const dir = stateDir();
  let job = load(dir, JOB);
  if (!job || rerun) {
    // A thread for the request: the first start, or (--rerun) every restart.
    const runs = (job?.runs ?? 0) + 1;
    job = { request: REQUEST.id, runs, thread_id: `${REQUEST.id}-run${runs}` };
    save(dir, JOB, job);
  }

  const mcp = new MultiServerMCPClient({
    mcpServers: {
      support: { url: supportMcpUrl(), automaticSSEFallback: false },
    },
  });
  try {
    const tools = await mcp.getTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const model = new ChatOpenAI({ model: 'gpt-4o-mini', temperature: 0 }).bindTools(tools);
    const instructions = new SystemMessage(
      'You handle refund requests: look the order up, refund the customer and email them, then report what you did.',
    );

    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state) => ({ messages: [await model.invoke([instructions, ...state.messages])] }))
      .addNode('tools', async (state, config) => {
        const { tool_calls: calls } = state.messages.at(-1);
        const step = `${config.configurable.thread_id}:tools@${config.metadata.langgraph_step}`;
        // The model's calls at once, as LangGraph's ToolNode runs them, each with its key.
        const messages = await Promise.all(
          calls.map((call) => {
            const tool = byName[call.name];
            const takesKey = 'idempotency_key' in (tool.schema?.properties ?? {});
            const args = takesKey && !noKey ? { ...call.args, idempotency_key: `${step}:${call.name}` } : call.args;
            return tool.invoke({ ...call, args }); // a ToolCall in, a ToolMessage out
          }),
        );
        return { messages };
      })
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', toolsCondition, ['tools', '__end__'])
      .addEdge('tools', 'agent');

    const app = graph.compile({ checkpointer: await openSaver(dir) });
    const config = { configurable: { thread_id: job.thread_id }, durability: 'sync' };
    const saved = await app.getState(config);
    if (saved.values.messages?.length && saved.next.length === 0) return; // finished before
    // An existing thread resumes with null input; a new one starts with the request.
    const input = saved.values.messages?.length ? null : { messages: [new HumanMessage(REQUEST.text)] };
    await app.invoke(input, config);
  } finally {
    await mcp.close();
  }
}



/**
 * Prints the thread's latest checkpoint as the oracle compares it: each message's type, text and
 * tool calls, and each tool result's id, without the ids that differ by design (message ids,
 * the tool-call ids the model draws) and without whether the tool replayed its answer.
 */
async function dumpState() {
  const dir = stateDir();
  const job = load(dir, JOB);
  if (!job) {
    process.stdout.write(JSON.stringify({ status: 'not-started' }) + '\n');
    return;
  }
  const saver = await openSaver(dir);
  const tuple = await saver.getTuple({ configurable: { thread_id: job.thread_id } });
  const messages = tuple?.checkpoint.channel_values.messages ?? [];
  const plain = messages.map((m) => {
    const out = { type: m.getType(), content: m.content };
    if (m.tool_calls?.length) out.tool_calls = m.tool_calls.map((c) => ({ name: c.name, args: c.args }));
    if (m.getType() === 'tool') {
      out.name = m.name;
      out.content = resultId(m.content);
    }
    return out;
  });
  const last = plain.at(-1);
  const status = last?.type === 'ai' && !last.tool_calls ? 'done' : 'running';
  process.stdout.write(JSON.stringify({ request: job.request, thread_id: job.thread_id, status, messages: plain }) + '\n');
}
