// nodetest_usage.ts uses every declaration of nodetest.d.ts as a test file would, through the
// package's own name. js_test.go type-checks it with tsc, strictly; it is never run.
import { check, type CheckOptions } from '@chaoskit/client/nodetest';

const every: CheckOptions = {
  exec: ['node', 'app.mjs'],
  name: 'app',
  tools: { create_po: 'idempotent-by-key,latency=1s' },
  http: { 'POST /v1/charges': 'idempotent-by-header:Idempotency-Key' },
  cassette: 'cassettes/app.json',
  state: 'node app.mjs --dump-state',
  faults: ['kill', 'tool'],
  ignore: ['$.checkpoints[*].ts'],
  disk: 'fuse',
  beats: 'calls',
  env: ['MODE=test'],
  dir: '.',
  mode: 'random',
  cases: 20,
  seed: 7,
  restart: 'never',
  parallel: 2,
  out: 'reports',
  chaoskit: '/usr/local/bin/chaoskit',
};
const suite: Promise<void> = check('orders survive crashes', every);
void suite;
void check('the least', { exec: 'node app.mjs', tools: ['create_po=idempotent-by-key'], env: { MODE: 'test' } });
void check('routes as flags', { exec: 'node app.mjs', http: ['POST /v1/charges=idempotent-by-header:Idempotency-Key'] });

// @ts-expect-error a campaign needs its command
void check('no command', { faults: 'kill' });
// @ts-expect-error a disk is plain or fuse
void check('bad disk', { exec: 'node app.mjs', disk: 'tmpfs' });
