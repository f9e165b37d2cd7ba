// usage.ts uses every declaration of chaoskit.d.ts as a harness would, through the package's
// own name. js_test.go type-checks it with tsc, strictly; it is never run.
import {
  connect, Client, ChaoskitError, ConnectionError, NotUnderChaoskit, errorsByCode, VERSION, MAX_LINE,
  TransientError, AmbiguousError, TimeoutError, RateLimitedError, DeadlineError,
  type Call, type Reply, type Lease, type Message, type ErrorCode,
} from '@chaoskit/client';

async function harness(): Promise<void> {
  let c: Client;
  try {
    c = await connect();
  } catch (err) {
    if (err instanceof NotUnderChaoskit || err instanceof ConnectionError) return;
    throw err;
  }
  const proc: number = c.process + c.worker;
  const dir: string = c.stateDir;
  const call: Call = { tool: 'create_po', key: `po-${proc}`, args: { usd: 84_000n, dir }, timeoutMs: 1000 };
  let reply: Reply | undefined;
  for (let i = 0; i < 3 && !reply; i++) {
    try {
      reply = await c.call(call);
    } catch (err) {
      if (!(err instanceof TransientError || err instanceof AmbiguousError || err instanceof TimeoutError)) throw err;
      const code: 'transient' | 'ambiguous' | 'timeout' = err.code;
      void code;
    }
  }
  const id: string = reply?.id ?? '';
  const replayed: boolean = reply?.replayed ?? false;
  const topic: string = reply?.topic ?? '';
  let text = '';
  try {
    text = await c.model({ purpose: 'plan', reply: 'ok', latencyMs: 10, timeoutMs: 100 });
  } catch (err) {
    if (err instanceof RateLimitedError) await c.sleep(err.retryAfterMs);
    else if (err instanceof ChaoskitError && err.code === 'model_server') await c.sleep(1000);
    else throw err;
  }
  const now: Date = await c.now();
  const msgs: Message[] = await c.await(topic, { timeoutMs: 5000 }).catch((err: unknown) => {
    if (err instanceof DeadlineError) return [];
    throw err;
  });
  const seen: Message[] = await c.messages(topic);
  const lease: Lease = await c.acquire('run-1', 30_000);
  const token: bigint = lease.token;
  const renewed = await c.renew(lease, 30_000);
  await c.call({ tool: 'create_po', fence: renewed.token, ref: 'order-1', args: null });
  const looked: Reply | null = await c.lookup('create_po', 'order-1', { timeoutMs: 1000 });
  if (looked === null) await c.refuse('cannot tell whether order-1 was filed');
  await c.release(renewed);
  await c.mark('step 1');
  const r: bigint = await c.random();
  const codes: ErrorCode[] = Object.keys(errorsByCode) as ErrorCode[];
  const t: typeof TransientError = errorsByCode.transient;
  const v: 1 = VERSION;
  await c.done({ id, replayed, text, now: now.getTime(), msgs: msgs.length + seen.length, token, r, codes, t: t.code, v, MAX_LINE });
  c.close();
}

void harness();
