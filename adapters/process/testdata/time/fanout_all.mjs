// A harness that makes five independent, keyed calls at once with Promise.all at each step, and
// checkpoints the step once all five are back. Run under chaoskit (PROTOCOL.md).
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '../../js/chaoskit.mjs';

const STEPS = 2;

function load(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return { steps: [] };
  }
}

function save(path, dir, state) {
  writeFileSync(path + '.tmp', JSON.stringify(state));
  const f = openSync(path + '.tmp', 'r+');
  fsyncSync(f);
  closeSync(f);
  renameSync(path + '.tmp', path);
  const d = openSync(dir, 'r');
  fsyncSync(d);
  closeSync(d);
}

if (process.argv.includes('--dump-state')) {
  console.log(JSON.stringify(load(join(process.env.CHAOSKIT_STATE_DIR, 'state.json'))));
} else {
  const ck = await connect();
  const path = join(ck.stateDir, 'state.json');
  const state = load(path);
  for (let step = state.steps.length; step < STEPS; step++) {
    const replies = await Promise.all([0, 1, 2, 3, 4].map((n) =>
      ck.call({ tool: 'create_po', key: `s${step}-${n}`, args: { step, line: n } })));
    state.steps.push(replies.map((r) => r.id).sort());
    save(path, ck.stateDir, state);
    await ck.mark(`step ${step}`);
  }
  await ck.done({ steps: state.steps.length });
}
