// A harness that asks the model twice, and retries a rate limit after the retry-after it was
// given, with setTimeout. Run under chaoskit (PROTOCOL.md).
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, RateLimitedError } from '../../js/chaoskit.mjs';

async function ask(ck, purpose) {
  for (;;) {
    try {
      return await ck.model({ purpose, reply: 'ok', latencyMs: 500 });
    } catch (err) {
      if (!(err instanceof RateLimitedError)) throw err;
      await sleep(err.retryAfterMs);
    }
  }
}

const ck = await connect();
await ck.done({ answers: [await ask(ck, 'plan'), await ask(ck, 'act')] });
