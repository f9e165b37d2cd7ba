// openai-agent.mjs: a purchasing agent built on the OpenAI Agents SDK (@openai/agents), as a
// team would write it; nothing in it knows chaoskit. It files a purchase order and charges the
// company card over the payments REST API, and tells finance over an MCP server.
//
//	node openai-agent.mjs                    run (or resume) the purchase, Responses API
//	node openai-agent.mjs --chat-completions the same over Chat Completions
//	node openai-agent.mjs --no-key           buggy: no idempotency keys
//	node openai-agent.mjs --rerun            buggy: a restart runs the purchase again from its input
//	node openai-agent.mjs --dump-state       print the durable state as JSON (connects nowhere)
//
// Environment: OPENAI_BASE_URL and OPENAI_API_KEY (the SDK's own), PAYMENTS_API_URL (the payments
// service, e.g. https://payments.internal), FINANCE_MCP_URL (the finance MCP server's streamable
// HTTP URL; CHAOSKIT_MCP_URL when unset), STATE_DIR or CHAOSKIT_STATE_DIR (durable state).
//
// # Checkpoint and resume
//
// The SDK's documented way to stop a run and finish it in another process is its RunState: a
// tool with `needsApproval: true` pauses the run before it executes, the run returns its
// `interruptions`, and "if you need to shut down the request and continue later on you can
// serialize the state using result.state.toString() ... and resume later on by passing the
// serialized state into RunState.fromString(agent, serializedState)" (guides/human-in-the-loop,
// "Dealing with longer approval times"; tool.d.ts calls needsApproval: true "durable manual
// approvals"). Sessions and result.history only carry a conversation from one finished run()
// to the next, and a finished run's state cannot be resumed ("Accepted final output cannot be
// resumed directly from serialized terminal state", run.mjs). So both money-moving tools need
// approval, as a purchasing team would want anyway: each pause is saved durably (checkpoint.mjs:
// temporary file, fsync, rename, directory fsync), then the approver decides (here a spending
// policy; in production a person, hours later, in another process), and the run goes on from
// the state. A process killed anywhere restarts from the last pause: the call it approved there
// is made again, which the idempotency key makes a replay.
//
// # Idempotency keys
//
// A key is the run id and the business step: `PR-1042-run1:purchase_order`. The run id is
// minted when the run starts and travels in the run context, which RunState serializes, so a
// resumed run makes the same keys. Never the tool-call id: the provider issues fresh ones with
// every answer, so a model asked again after a crash gives the same call another id.
//
// # The buggy twins
//
//	--no-key  sends no Idempotency-Key and no _meta key: a call made again after a crash is a
//	          second purchase order, a second charge.
//	--rerun   keeps the checkpoint but resumes from the request instead of the state: a restart
//	          is a new run (run id PR-1042-run2), which asks the model from the start and makes
//	          every finished call again under new keys.
import { Agent, run, tool, RunState, MCPServerStreamableHttp, setOpenAIAPI } from '@openai/agents';
import { z } from 'zod';
import { stateDir, load, save } from './checkpoint.mjs';

/** The purchase request this agent carries out. */
const REQUEST = {
  id: 'PR-1042',
  text: 'Purchase request PR-1042: buy 40 laptops from Acme Corp for 84000 USD, pay with the company card, and tell finance.',
};

/** The most the approver signs off without a person. */
const SPENDING_LIMIT_USD = 100_000;

/** The checkpoint's file name in the state directory. */
const CHECKPOINT = 'purchase-run.json';

const flags = new Set(process.argv.slice(2));
const noKey = flags.has('--no-key');
const rerun = flags.has('--rerun');

if (flags.has('--dump-state')) {
  process.stdout.write(JSON.stringify(dumpState(load(stateDir(), CHECKPOINT))) + '\n');
} else {
  await main();
}

async function main() {
  if (flags.has('--chat-completions')) setOpenAIAPI('chat_completions');
  const dir = stateDir();
  const payments = requiredEnv('PAYMENTS_API_URL');

  const finance = new MCPServerStreamableHttp({
    name: 'finance',
    url: process.env.FINANCE_MCP_URL || requiredEnv('CHAOSKIT_MCP_URL'),
    cacheToolsList: true,
    // The MCP call's key goes in the request's _meta, which the SDK lets a resolver fill in
    // from the run context: the model never sees it.
    toolMetaResolver: ({ runContext, toolName }) =>
      noKey ? undefined : { idempotency_key: `${runContext.context.runId}:${toolName}` },
  });

  const agent = new Agent({
    name: 'purchasing',
    model: 'gpt-4o-mini',
    instructions:
      'You carry out purchase requests: file the purchase order, then charge the company card for it ' +
      'and tell finance, then report what you did.',
    tools: [createPurchaseOrder(payments), chargeCard(payments)],
    mcpServers: [finance],
  });

  let saved = load(dir, CHECKPOINT);
  if (saved?.status === 'done') return; // finished before the restart: nothing left to do
  if (!saved || rerun) {
    // A new run of the request: the first start, or (--rerun) every restart.
    const runs = (saved?.runs ?? 0) + 1;
    saved = { request: REQUEST.id, runs, run_id: `${REQUEST.id}-run${runs}`, status: 'running' };
    save(dir, CHECKPOINT, saved);
  }
  // Resume the paused run, its context (the run id) included; a run that never paused starts
  // over from the request under the same run id, so its calls make the same keys.
  // RunState.fromString lists the MCP server's tools (to rehydrate the agent's tools), so the
  // server is connected first.
  await finance.connect();
  try {
    let input = saved.state ? await RunState.fromString(agent, saved.state) : REQUEST.text;
    for (;;) {
      const result = await run(agent, input, { context: { runId: saved.run_id }, maxTurns: 10 });
      if (result.interruptions.length === 0) {
        saved = { ...saved, status: 'done', state: undefined, final_output: result.finalOutput, effects: effectsOf(result) };
        save(dir, CHECKPOINT, saved);
        break;
      }
      // Paused for approval: save the run before anyone decides, then decide and go on.
      saved = { ...saved, state: result.state.toString(), effects: effectsOf(result) };
      save(dir, CHECKPOINT, saved);
      for (const item of result.interruptions) {
        if (approve(item)) result.state.approve(item);
        else result.state.reject(item);
      }
      input = result.state;
    }
  } finally {
    await finance.close();
  }
}

/** The approver: a spending policy, where a person would click in production. */
function approve(item) {
  const args = JSON.parse(item.rawItem.arguments ?? '{}');
  return (args.amount_usd ?? 0) <= SPENDING_LIMIT_USD;
}

/** The tool that files a purchase order with the payments service. */
function createPurchaseOrder(payments) {
  return tool({
    name: 'create_purchase_order',
    description: 'File a purchase order with a vendor. Returns the order with its id.',
    parameters: z.object({
      vendor: z.string(),
      item: z.string(),
      quantity: z.number().int(),
      amount_usd: z.number(),
    }),
    needsApproval: true,
    execute: async (order, runContext) =>
      postJSON(`${payments}/v1/purchase_orders`, order, key(runContext, 'purchase_order')),
  });
}

/** The tool that charges the company card for a purchase order. */
function chargeCard(payments) {
  return tool({
    name: 'charge_card',
    description: 'Charge the company card for a purchase order. Returns the charge with its id.',
    parameters: z.object({
      purchase_order_id: z.string(),
      amount_usd: z.number(),
    }),
    needsApproval: true,
    execute: async (charge, runContext) =>
      postJSON(`${payments}/v1/charges`, charge, key(runContext, 'charge')),
  });
}

/** The idempotency key of a business step of this run, or none (--no-key). */
function key(runContext, step) {
  return noKey ? undefined : `${runContext.context.runId}:${step}`;
}

/**
 * POSTs body as JSON with an Idempotency-Key, retrying with the same key while the answer leaves
 * open whether the request was applied (a 5xx or a dropped connection), as payment APIs ask.
 */
async function postJSON(url, body, idempotencyKey) {
  const headers = { 'Content-Type': 'application/json' };
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  for (let attempt = 1; ; attempt++) {
    let res;
    try {
      res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    } catch (err) {
      if (attempt === 3) throw err;
      await sleep(250 * 2 ** attempt);
      continue;
    }
    const text = await res.text();
    if (res.ok) return text;
    if (res.status < 500 || attempt === 3) throw new Error(`POST ${url}: ${res.status} ${text}`);
    await sleep(250 * 2 ** attempt);
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function requiredEnv(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`openai-agent: ${name} is not set`);
    process.exit(2);
  }
  return v;
}

/** What each finished tool call created, by tool: the id its service answered. */
function effectsOf(result) {
  const effects = {};
  for (const item of result.newItems) {
    if (item.type !== 'tool_call_output_item') continue;
    effects[item.rawItem.name] = idOf(item.output);
  }
  return effects;
}

/** The id in a tool's output (a JSON object as text, or MCP content), else the output. */
function idOf(output) {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  try {
    const doc = JSON.parse(text);
    if (doc?.id) return doc.id;
    if (Array.isArray(doc) && doc[0]?.text) return idOf(doc[0].text);
    if (doc?.text) return idOf(doc.text);
  } catch {
    // not JSON: keep the text
  }
  return text;
}

/** The durable state as the oracle compares it: no provider ids, no serialized SDK internals. */
function dumpState(saved) {
  if (!saved) return { status: 'not-started' };
  return {
    request: saved.request,
    run_id: saved.run_id,
    status: saved.status,
    effects: saved.effects ?? {},
    final_output: saved.final_output ?? null,
  };
}
