// Preloaded (node --import ./faults/netlog.mjs) by the fault tests: every fetch the process
// makes is appended to the file $CK_NETLOG as "METHOD URL", and a fetch to a host that is not
// loopback gets an empty 200 without touching the network, so that what an SDK would send
// elsewhere (the Agents SDK's trace exporter) is seen and nothing leaves the machine.
import { appendFileSync } from 'node:fs';

const realFetch = globalThis.fetch;
const loopback = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

globalThis.fetch = async function fetch(input, init) {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  const method = init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET');
  if (process.env.CK_NETLOG) appendFileSync(process.env.CK_NETLOG, `${method} ${url.href}\n`);
  if (!loopback.has(url.hostname)) {
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  }
  return realFetch(input, init);
};
