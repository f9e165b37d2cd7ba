// LangChain's ChatOpenAI against the stand-in: node langchain.mjs [chat|responses].
import { ChatOpenAI } from '@langchain/openai';
import { model, createPO, notify, print } from './common.mjs';

const useResponsesApi = process.argv[2] === 'responses';
const llm = new ChatOpenAI({ model, maxRetries: 0, useResponsesApi }).bindTools(
  [createPO, notify].map((f) => ({ type: 'function', function: f })),
);

const whole = await llm.invoke('restock A-1');
let streamed;
for await (const chunk of await llm.stream('restock A-1')) {
  streamed = streamed === undefined ? chunk : streamed.concat(chunk);
}
const text = (m) => (typeof m.content === 'string' ? m.content : m.content.filter((p) => p.type === 'text').map((p) => p.text).join(''));
print({
  text: text(whole),
  calls: whole.tool_calls.map((c) => ({ name: c.name, args: c.args })),
  streamed_text: text(streamed),
  streamed_calls: streamed.tool_calls.map((c) => ({ name: c.name, args: c.args })),
});
