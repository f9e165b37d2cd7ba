// The openai package's Responses client against the stand-in: a first turn with parallel
// function calls, streamed and not, then the second turn with the calls' outputs.
import OpenAI from 'openai';
import { model, createPO, notify, calls, print } from './common.mjs';

const client = new OpenAI({ maxRetries: 0 });
const tools = [createPO, notify].map((f) => ({ type: 'function', strict: true, ...f }));
const input = [{ role: 'user', content: 'restock A-1' }];

const whole = await client.responses.create({ model, input, tools, store: false });
const fcs = whole.output.filter((o) => o.type === 'function_call');

const stream = client.responses.stream({ model, input, tools, store: false });
const streamed = await stream.finalResponse();

const next = [...input, ...whole.output];
for (const c of fcs) {
  next.push({ type: 'function_call_output', call_id: c.call_id, output: c.name === 'create_po' ? 'PO-7 created' : 'sent' });
}
let second = '';
for await (const ev of await client.responses.create({ model, input: next, tools, store: false, stream: true })) {
  if (ev.type === 'response.output_text.delta') second += ev.delta;
}

print({
  text: whole.output_text,
  calls: calls(fcs),
  status: whole.status,
  usage: whole.usage.total_tokens > 0,
  streamed_text: streamed.output_text,
  streamed_calls: calls(streamed.output.filter((o) => o.type === 'function_call')),
  ids: [whole.id, ...fcs.map((c) => c.call_id)],
  second,
});
