// The Anthropic SDK's Messages client against the stand-in: a first turn with parallel tool
// uses, streamed and not, then the second turn with the tools' results.
import Anthropic from '@anthropic-ai/sdk';
import { model, createPO, notify, print } from './common.mjs';

const client = new Anthropic({ maxRetries: 0 });
const tools = [createPO, notify].map((f) => ({ name: f.name, description: f.description, input_schema: f.parameters }));
const messages = [{ role: 'user', content: 'restock A-1' }];

const whole = await client.messages.create({ model, max_tokens: 1024, messages, tools });
const streamed = await client.messages.stream({ model, max_tokens: 1024, messages, tools }).finalMessage();

const uses = whole.content.filter((b) => b.type === 'tool_use');
messages.push({ role: 'assistant', content: whole.content });
messages.push({
  role: 'user',
  content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: u.name === 'create_po' ? 'PO-7 created' : 'sent' })),
});
const second = await client.messages.stream({ model, max_tokens: 1024, messages, tools }).finalMessage();

const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
const calls = (m) => m.content.filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, args: b.input }));
print({
  text: text(whole),
  calls: calls(whole),
  stop: whole.stop_reason,
  streamed_text: text(streamed),
  streamed_calls: calls(streamed),
  ids: [whole.id, ...uses.map((u) => u.id)],
  second: text(second),
});
