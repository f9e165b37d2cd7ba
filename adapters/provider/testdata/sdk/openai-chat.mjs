// The openai package's Chat Completions client against the stand-in: a first turn with
// parallel tool calls, streamed and not, then the second turn with the tools' results.
import OpenAI from 'openai';
import { model, createPO, notify, calls, print } from './common.mjs';

const client = new OpenAI({ maxRetries: 0 });
const tools = [createPO, notify].map((f) => ({ type: 'function', function: f }));
const messages = [{ role: 'user', content: 'restock A-1' }];

const whole = await client.chat.completions.create({ model, messages, tools });
const msg = whole.choices[0].message;

const stream = client.chat.completions.stream({ model, messages, tools, stream_options: { include_usage: true } });
const streamed = await stream.finalChatCompletion();

messages.push(msg);
for (const c of msg.tool_calls) {
  messages.push({ role: 'tool', tool_call_id: c.id, content: c.function.name === 'create_po' ? 'PO-7 created' : 'sent' });
}
let second = '';
for await (const chunk of await client.chat.completions.create({ model, messages, tools, stream: true })) {
  second += chunk.choices[0]?.delta?.content ?? '';
}

print({
  text: msg.content,
  calls: calls(msg.tool_calls, (c) => c.function.name, (c) => c.function.arguments),
  finish: whole.choices[0].finish_reason,
  usage: whole.usage.total_tokens > 0,
  streamed_text: streamed.choices[0].message.content,
  streamed_calls: calls(streamed.choices[0].message.tool_calls, (c) => c.function.name, (c) => c.function.arguments),
  streamed_usage: streamed.usage?.total_tokens > 0,
  ids: [whole.id, ...msg.tool_calls.map((c) => c.id)],
  second,
});
