// repro.mjs. node repro.mjs [FULL]: five checkpoints saved by SqliteSaver, then the process dies
// without closing the database (as at a power cut, nothing after the last put runs).
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { emptyCheckpoint } from '@langchain/langgraph-checkpoint';
const saver = SqliteSaver.fromConnString('cp.db');
const config = { configurable: { thread_id: 't1', checkpoint_ns: '' } };
for (let step = 0; step < 5; step++) {
  const cp = { ...emptyCheckpoint(), id: `0000000${step}-0000-6000-8000-000000000000` };
  await saver.put(config, cp, { source: 'loop', step, parents: {} }, {});
  if (step === 0 && process.argv[2] === 'FULL') saver.db.pragma('synchronous = FULL'); // FULL, set after setup()
  process.stderr.write(`put ${step} resolved\n`);
}
console.log('journal_mode', saver.db.pragma('journal_mode', { simple: true }), 'synchronous', saver.db.pragma('synchronous', { simple: true }));
process.kill(process.pid, 'SIGKILL');
