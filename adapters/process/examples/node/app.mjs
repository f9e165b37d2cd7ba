// app.mjs is a plain-JavaScript harness under chaoskit: it files three purchase orders, one
// step each, through the create_po tool, and keeps a JSON checkpoint in CHAOSKIT_STATE_DIR so
// that a process killed at any point resumes where the last durable step left off.
//
//	node app.mjs               the correct harness
//	node app.mjs --broken      the same, with the two classic bugs
//	node app.mjs --dump-state  print the checkpoint as JSON (chaoskit's --state command)
//
// Correct, each step calls the tool with an idempotency key stable per step (a retry, or a
// rerun after a crash, is the same order, which the tool files once), retries the errors that
// say "maybe not done", then saves the checkpoint durably (write a temporary file, fsync it,
// rename it over the checkpoint, fsync the directory) and only then marks the step done.
//
// Broken, a step calls the tool without a key and overwrites the checkpoint in place after
// acting: a crash between the act and the save files the order again on restart.
//
// Run it under chaoskit (see README.md):
//
//	chaoskit run --exec 'node app.mjs' --tool create_po=idempotent-by-key,latency=1s \
//	  --state 'node app.mjs --dump-state' --faults kill,tool --out report
import fs from 'node:fs';
import path from 'node:path';
import {
  connect, NotUnderChaoskit, TransientError, AmbiguousError, TimeoutError,
} from '../../js/chaoskit.mjs';

/** The orders to file, one per step. */
const STEPS = [
  { vendor: 'acme', item: 'laptops', qty: 40, usd: 84000 },
  { vendor: 'globex', item: 'monitors', qty: 40, usd: 12000 },
  { vendor: 'initech', item: 'chairs', qty: 25, usd: 6500 },
];

/** The checkpoint's file name, in the state directory. */
const CHECKPOINT = 'checkpoint.json';

/** The checkpoint before any step: nothing filed. */
const EMPTY = { next: 0, orders: [] };

/** How often a step retries a call that may not have been applied. */
const TRIES = 5;

const broken = process.argv.includes('--broken');

if (process.argv.includes('--dump-state')) {
  process.stdout.write(JSON.stringify(load(process.env.CHAOSKIT_STATE_DIR ?? '.')) + '\n');
} else {
  await main();
}

async function main() {
  let ck;
  try {
    ck = await connect();
  } catch (err) {
    if (!(err instanceof NotUnderChaoskit)) throw err;
    console.error(`app: ${err.message}; run it with chaoskit run --exec 'node app.mjs' (see README.md)`);
    process.exit(2);
  }
  let cp = load(ck.stateDir); // resume: the steps in cp are durable and were marked
  for (let i = cp.next; i < STEPS.length; i++) {
    const order = STEPS[i];
    const reply = broken
      ? await ck.call({ tool: 'create_po', args: order })
      : await fileOrder(ck, { tool: 'create_po', key: `po-${i}-${order.vendor}`, args: order });
    cp = { next: i + 1, orders: [...cp.orders, { step: i, vendor: order.vendor, po: reply.id }] };
    if (broken) {
      saveInPlace(ck.stateDir, cp);
    } else {
      save(ck.stateDir, cp);
    }
    await ck.mark(`step ${i} saved`);
  }
  await ck.done({ filed: cp.orders.map((o) => o.po) });
}

/**
 * Calls the tool, retrying with the same key while the answer leaves it open whether the order
 * was filed: the key makes a retry the same order.
 */
async function fileOrder(ck, call) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ck.call(call);
    } catch (err) {
      const maybe = err instanceof TransientError || err instanceof AmbiguousError || err instanceof TimeoutError;
      if (!maybe || attempt === TRIES) throw err;
      await ck.sleep(1000 * 2 ** attempt); // virtual time: the backoff costs nothing
    }
  }
}

/** Reads the checkpoint, or the empty one before the first step. */
function load(dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, CHECKPOINT), 'utf8'));
  } catch (err) {
    if (err.code === 'ENOENT') return EMPTY;
    throw err; // a checkpoint that does not parse is a loud failure, never a fresh start
  }
}

/**
 * Saves the checkpoint atomically and durably: a crash leaves either the old one or the new
 * one, whole.
 */
function save(dir, cp) {
  const file = path.join(dir, CHECKPOINT);
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, JSON.stringify(cp));
    fs.fsyncSync(fd); // the bytes are on disk before the name points at them
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const dfd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dfd); // the rename itself survives a power loss
  } finally {
    fs.closeSync(dfd);
  }
}

/** The broken variant's save: truncate the checkpoint and write it in place, without fsync. */
function saveInPlace(dir, cp) {
  const fd = fs.openSync(path.join(dir, CHECKPOINT), 'w');
  fs.writeSync(fd, JSON.stringify(cp));
  fs.closeSync(fd);
}
