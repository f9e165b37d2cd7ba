// A purchasing agent as a team writes one in Node with fetch and nothing else: it asks an
// OpenAI-compatible model (OPENAI_BASE_URL, OPENAI_API_KEY), runs the tools the model calls --
// create_po against the purchasing service's REST API (PURCHASING_URL) with an Idempotency-Key,
// notify against an MCP server over streamable HTTP (NOTIFY_MCP_URL) with its key in the
// arguments -- and keeps the conversation in conv.json under STATE_DIR, written whole and
// fsynced after every step. Nothing in it knows chaoskit.
//
//   node buyer.mjs               run or resume the conversation
//   node buyer.mjs --no-key      the same, sending no idempotency keys (a bug)
//   node buyer.mjs --dump-state  print the conversation's durable state as JSON
import fs from "node:fs";
import path from "node:path";

const STATE = path.join(process.env.STATE_DIR ?? ".", "conv.json");
const NO_KEY = process.argv.includes("--no-key");

class Retry extends Error {
  constructor(why, after = 1) {
    super(why);
    this.after = after;
  }
}

async function post(url, body, headers = {}) {
  let res;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (e) {
    throw new Retry(String(e));
  }
  if (res.status === 429) throw new Retry("429", Number(res.headers.get("retry-after") ?? "1"));
  if (res.status >= 500) throw new Retry(String(res.status));
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  try {
    return await res.json();
  } catch (e) {
    throw new Retry(String(e)); // the answer was cut
  }
}

async function withRetries(f) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof Retry) || attempt === 7) throw e;
      await new Promise((r) => setTimeout(r, Math.max(e.after, 1) * 1000));
    }
  }
}

function save(conv) {
  const tmp = STATE + ".tmp";
  const fd = fs.openSync(tmp, "w");
  fs.writeSync(fd, JSON.stringify(conv));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, STATE);
  const dir = fs.openSync(path.dirname(STATE), "r");
  fs.fsyncSync(dir);
  fs.closeSync(dir);
}

function load() {
  try {
    return JSON.parse(fs.readFileSync(STATE, "utf8"));
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
    return [{ role: "user", content: "order what the warehouse needs" }];
  }
}

async function runTool(call, step) {
  const name = call.function.name;
  const args = JSON.parse(call.function.arguments);
  const key = `${name}-${step}`;
  if (name === "create_po") {
    const out = await post(process.env.PURCHASING_URL + "/v1/purchase_orders", args, NO_KEY ? {} : { "Idempotency-Key": key });
    return out.id ?? "";
  }
  if (name === "notify") {
    if (!NO_KEY) args.key = key;
    const out = await post(
      process.env.NOTIFY_MCP_URL,
      { jsonrpc: "2.0", id: step, method: "tools/call", params: { name: "notify", arguments: args } },
      { Accept: "application/json, text/event-stream" },
    );
    if (out.error || out.result?.isError) throw new Retry(`notify: ${JSON.stringify(out.error ?? out.result)}`);
    return out.result.content[0].text;
  }
  throw new Error(`the model called a tool this agent has not: ${name}`);
}

async function main() {
  if (process.argv.includes("--dump-state")) {
    console.log(JSON.stringify(load()));
    return;
  }
  const conv = load();
  for (;;) {
    const last = conv.at(-1);
    if (last.role === "assistant" && !last.tool_calls) {
      console.log(last.content);
      return;
    }
    if (last.role === "assistant") {
      for (const call of last.tool_calls) {
        const out = await withRetries(() => runTool(call, conv.length));
        conv.push({ role: "tool", tool_call_id: call.id, content: out });
      }
      save(conv);
      continue;
    }
    const answer = await withRetries(() =>
      post(process.env.OPENAI_BASE_URL + "/chat/completions", { model: "gpt-4o-mini", messages: conv }, {
        Authorization: "Bearer " + process.env.OPENAI_API_KEY,
      }),
    );
    const msg = answer.choices[0].message;
    const kept = {};
    for (const k of ["role", "content", "tool_calls"]) if (msg[k] != null) kept[k] = msg[k];
    conv.push(kept);
    save(conv);
  }
}

await main();
