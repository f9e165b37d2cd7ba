// The Vercel AI SDK's generateText against the stand-in: node vercel-ai.mjs [responses|chat].
import { generateText, streamText, jsonSchema, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { model, createPO, notify, print } from './common.mjs';

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const m = process.argv[2] === 'chat' ? openai.chat(model) : openai.responses(model);
const tools = Object.fromEntries(
  [createPO, notify].map((f) => [f.name, tool({ description: f.description, inputSchema: jsonSchema(f.parameters) })]),
);

const whole = await generateText({ model: m, prompt: 'restock A-1', tools, maxRetries: 0 });
const streamed = streamText({ model: m, prompt: 'restock A-1', tools, maxRetries: 0 });
const streamedCalls = await streamed.toolCalls;
print({
  text: whole.text,
  calls: whole.toolCalls.map((c) => ({ name: c.toolName, args: c.input })),
  streamed_text: await streamed.text,
  streamed_calls: streamedCalls.map((c) => ({ name: c.toolName, args: c.input })),
});
