// tour.mjs makes every request of the protocol once through the JavaScript client and sends
// what came back as its result: the same tour as the Go test child's -mode tour, so that
// js_test.go can hold both clients to one expected result. With --refuse it refuses to go on
// instead, as the Go child's -mode refuse does.
import { connect, DeadlineError } from '../chaoskit.mjs';

const c = await connect();
if (process.argv.includes('--refuse')) {
  await c.refuse('cannot tell whether order 7 was filed');
  process.exit(4);
}
const out = { process: c.process, attempt: c.attempt, worker: c.worker };
const t0 = await c.now();
await c.sleep(90_000);
const t1 = await c.now();
out.slept = `${(t1 - t0) / 60_000 | 0}m${((t1 - t0) % 60_000) / 1000}s`;
const r = await c.call({ tool: 'create_po', key: 'k1', ref: 'order-1', args: { b: 2, a: 1 } });
const found = await c.lookup('create_po', 'order-1');
const missing = await c.lookup('create_po', 'order-2');
out.lookup = `${found?.id} ${found !== null} ${missing !== null}`;
const again = await c.call({ tool: 'create_po', key: 'k1', args: { a: 1, b: 2 } });
out.po = r.id;
out.replayed = again.replayed;
out.model = await c.model({ purpose: 'plan', reply: 'file the order', latencyMs: 2000, timeoutMs: 60_000 });
const l = await c.acquire('run-1', 30_000);
const l2 = await c.renew(l, 30_000);
await c.release(l2);
out.token = l2.token; // a BigInt, sent as the integer it is
const ck = await c.call({ tool: 'check', key: 'c1', args: 'vendor' });
const msgs = await c.await(ck.topic, { timeoutMs: 3_600_000 });
out.message = msgs[0].body;
out.await_deadline = await c.await('nobody/writes/here', { timeoutMs: 5000 }).then(() => false, (err) => err instanceof DeadlineError);
out.messages = (await c.messages(ck.topic)).length;
out.random = (await c.random()) !== 0n;
await c.mark('toured');
await c.done(out);
