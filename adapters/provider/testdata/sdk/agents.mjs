// A tiny agent built with the OpenAI Agents SDK, one function tool, run against the stand-in:
// node agents.mjs [responses|chat_completions] [stream].
import { Agent, run, tool, setOpenAIAPI, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
import { print } from './common.mjs';

const [api = 'responses', mode = ''] = process.argv.slice(2);
setOpenAIAPI(api);
setTracingDisabled(true);

const orders = [];
const createPO = tool({
  name: 'create_po',
  description: 'Create a purchase order',
  parameters: z.object({ sku: z.string(), qty: z.number().int() }),
  execute: async ({ sku, qty }) => {
    orders.push({ sku, qty });
    return `PO-${orders.length} created for ${qty} x ${sku}`;
  },
});

const agent = new Agent({
  name: 'restocker',
  instructions: 'You restock the warehouse.',
  model: 'gpt-4o-mini',
  tools: [createPO],
});

let final;
if (mode === 'stream') {
  const result = await run(agent, 'agent: restock A-1', { stream: true });
  for await (const _ of result) {
    // drain the events
  }
  await result.completed;
  final = result.finalOutput;
} else {
  final = (await run(agent, 'agent: restock A-1')).finalOutput;
}
print({ final, orders });
