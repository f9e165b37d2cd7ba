// Clients as agents ship them, against chaoskit's MCP server: the official TypeScript SDK over
// streamable HTTP and over stdio (through the relay, launched as an MCP server subprocess), and
// LangChain's MCP adapters over both. adapters/mcp's TestClientCompatibility runs it with
//   CHAOSKIT_MCP_URL    the server's URL for this process
//   CHAOSKIT_TEST_RELAY the relay's command and its argument, separated by a space
// and reads one JSON object a line from its standard output.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { readFileSync } from 'node:fs';

const url = process.env.CHAOSKIT_MCP_URL;
const [relay, relayArg] = process.env.CHAOSKIT_TEST_RELAY.split(' ');
const print = (o) => console.log(JSON.stringify(o));
const failure = (e) => ({ error: e.constructor.name, code: e.code, message: e.message });

const version = (name) => JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
print({
  check: 'versions',
  sdk: version('@modelcontextprotocol/sdk'),
  langchain: version('@langchain/mcp-adapters'),
  core: version('@langchain/core'),
  node: process.version,
});

// The stdio transport's default environment, as agents leave it: no CHAOSKIT_MCP_URL.
const stdio = () => new StdioClientTransport({ command: relay, args: [relayArg], stderr: 'ignore' });
const http = () => new StreamableHTTPClientTransport(new URL(url));

async function sdk(transport, make, lostTimeout) {
  const client = new Client({ name: 'compat', version: '1' });
  await client.connect(make());
  const out = (check, o) => print({ client: 'sdk', transport, check, ...o });
  const { tools } = await client.listTools();
  out('list', { tools: tools.map((t) => t.name).sort() });
  const attempt = async (check, params, options) => {
    try {
      const r = await client.callTool(params, undefined, options);
      out(check, { isError: r.isError ?? false, text: r.content[0]?.text, structured: r.structuredContent });
    } catch (e) {
      out(check, failure(e));
    }
  };
  await attempt('arg-key', { name: 'create_po', arguments: { vendor: 'acme', idempotency_key: `${transport}-k1` } });
  await attempt('meta-key', { name: 'send_email', arguments: { to: 'a@b' }, _meta: { idempotency_key: `${transport}-m1` } });
  await attempt('transient', { name: 'flaky', arguments: {} });
  await attempt('fenced', { name: 'fenced', arguments: {} });
  await attempt('undeclared', { name: 'nope', arguments: {} });
  await attempt('lost', { name: 'lost', arguments: {} }, { timeout: lostTimeout });
  await attempt('late', { name: 'slow', arguments: {} }, { timeout: 300 });
  await attempt('after', { name: 'create_po', arguments: { vendor: 'acme', idempotency_key: `${transport}-k2` } });
  await client.close();
}

async function langchain(transport, connection) {
  const client = new MultiServerMCPClient({ mcpServers: { chaoskit: connection } });
  const out = (check, o) => print({ client: 'langchain', transport, check, ...o });
  const tools = await client.getTools();
  out('list', { tools: tools.map((t) => t.name).sort() });
  const tool = (name) => tools.find((t) => t.name === name);
  for (const [check, name, args] of [
    ['arg-key', 'create_po', { vendor: 'acme', idempotency_key: `lc-${transport}-k1` }],
    ['transient', 'flaky', {}],
    ['fenced', 'fenced', {}],
  ]) {
    try {
      const r = await tool(name).invoke(args);
      out(check, { result: typeof r === 'string' ? r : JSON.stringify(r) });
    } catch (e) {
      out(check, failure(e));
    }
  }
  await client.close();
}

await sdk('http', http, 5000);
await sdk('stdio', stdio, 500);
await langchain('http', { transport: 'http', url });
await langchain('stdio', { transport: 'stdio', command: relay, args: [relayArg] });
print({ check: 'done' });
