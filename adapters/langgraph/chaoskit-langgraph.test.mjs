// Unit tests of the adapter without chaoskit (node --test): the checkpointer's journal mode and
// marks, the idempotency keys, and the state reader, on a real graph and a real database in a
// temporary directory. chaoskit's own tests of the example are in langgraph_test.go.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { StateGraph, Annotation, MessagesAnnotation, START, END } from '@langchain/langgraph';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import Database from 'better-sqlite3';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { DATABASE, openSaver, reproducibleIds, resumeInput, stepKey } from './chaoskit-langgraph.mjs';
import { latestCheckpoint, plainMessage } from './latest-checkpoint.mjs';

/** The temporary directories to remove when the tests are done. */
const dirs = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A fake client: a state directory, the marks it was given, and the sleeps it was asked for. */
function fakeClient() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chaoskit-langgraph-test-'));
  dirs.push(dir);
  const marks = [];
  const sleeps = [];
  return {
    stateDir: dir, marks, sleeps,
    mark: async (label) => { marks.push(label); },
    sleep: async (ms) => { sleeps.push(ms); await ck_onSleep.get(sleeps)?.(sleeps.length); },
  };
}

/** What a fake client's sleep does besides counting, by its sleeps array. */
const ck_onSleep = new WeakMap();

/** A graph of two nodes, a then b; b throws when told to. */
function twoNodes(saver, { failB = false } = {}) {
  const State = Annotation.Root({ ...MessagesAnnotation.spec });
  return new StateGraph(State)
    .addNode('a', async () => ({ messages: [new AIMessage({ content: 'a', id: 'm-a' })] }))
    .addNode('b', async () => {
      if (failB) throw new Error('b failed');
      return { messages: [new AIMessage({ content: 'b', id: 'm-b' })] };
    })
    .addEdge(START, 'a').addEdge('a', 'b').addEdge('b', END)
    .compile({ checkpointer: saver });
}

test('the checkpointer stays in rollback-journal mode with synchronous=EXTRA, and marks each commit', async () => {
  const ck = fakeClient();
  const saver = openSaver(ck);
  const config = { configurable: { thread_id: 't1' }, durability: 'sync' };
  await twoNodes(saver).invoke({ messages: [new HumanMessage({ content: 'go', id: 'm-in' })] }, config);
  assert.equal(saver.db.pragma('journal_mode', { simple: true }), 'delete');
  assert.equal(saver.db.pragma('synchronous', { simple: true }), 3); // EXTRA
  saver.db.close();
  assert.deepEqual(ck.marks, [
    'checkpoint t1 step -1', '__start__ done t1 step 0', 'checkpoint t1 step 0',
    'a done t1 step 1', 'checkpoint t1 step 1', 'b done t1 step 2', 'checkpoint t1 step 2',
  ]);
  assert.ok(!fs.existsSync(path.join(ck.stateDir, `${DATABASE}-wal`)));

  const t = latestCheckpoint(path.join(ck.stateDir, DATABASE), 't1');
  assert.equal(t.metadata.step, 2);
  assert.deepEqual(t.checkpoint.channel_values.messages.map(plainMessage), [
    { type: 'human', content: 'go' }, { type: 'ai', content: 'a' }, { type: 'ai', content: 'b' },
  ]);
  assert.equal(latestCheckpoint(path.join(ck.stateDir, DATABASE), 'no-such-thread'), null);
  assert.equal(latestCheckpoint(path.join(ck.stateDir, 'missing.db'), 't1'), null);
});

test("journal 'wal' does what SqliteSaver does", async () => {
  const ck = fakeClient();
  const saver = openSaver(ck, { journal: 'wal' });
  await twoNodes(saver).invoke({ messages: [] }, { configurable: { thread_id: 't1' } });
  assert.equal(saver.db.pragma('journal_mode', { simple: true }), 'wal');
  saver.db.close();
});

test('a node that fails is not marked done, and the thread resumes with null input', async () => {
  const ck = fakeClient();
  let saver = openSaver(ck);
  const config = { configurable: { thread_id: 't1' }, durability: 'sync' };
  await assert.rejects(twoNodes(saver, { failB: true }).invoke({ messages: [] }, config), /b failed/);
  assert.ok(!ck.marks.some((m) => m.startsWith('b done')), ck.marks.join('\n'));
  saver.db.close();

  saver = openSaver(ck);
  assert.equal(await resumeInput(saver, config, { messages: [] }), null);
  const out = await twoNodes(saver).invoke(null, config);
  assert.deepEqual(out.messages.map((m) => m.content), ['a', 'b']);
  assert.equal(ck.marks.filter((m) => m.startsWith('a done')).length, 1); // a did not run again
  saver.db.close();
});

test('keys', () => {
  const config = { configurable: { thread_id: 't1', __pregel_task_id: 'task-9' }, metadata: { langgraph_step: 3, langgraph_node: 'tools' } };
  const state = { messages: [new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'x', args: {} }, { id: 'c2', name: 'x', args: {} }] })] };
  assert.equal(stepKey(config, 'step', { state, toolCallId: 'c2' }), 't1:3:tools:1');
  assert.equal(stepKey(config, 'step', { state, toolCallId: 'c1' }), 't1:3:tools:0');
  assert.equal(stepKey(config, 'tool-call-id', { state, toolCallId: 'c2' }), 't1:c2');
  assert.equal(stepKey(config, 'task-id'), 'task-9');
  assert.equal(stepKey(config, 'none'), undefined);
  assert.throws(() => stepKey(config, 'uuid'), /unknown key scheme/);
});

/**
 * Fills the database: SQLite answers SQLITE_FULL ("database or disk is full") to a write that
 * needs more pages than max_page_count, as it does when the disk has no room. A write of BIG
 * (more than a page) needs more.
 */
const BIG = 'x'.repeat(20000);
function fill(db) {
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
}

test('a write the disk has no room for fails the run, as with SqliteSaver, and leaves no transaction open', async () => {
  const ck = fakeClient();
  const saver = openSaver(ck);
  await saver.getTuple({ configurable: { thread_id: 't1' } });
  fill(saver.db);
  await assert.rejects(twoNodes(saver).invoke({ messages: [new HumanMessage({ content: BIG, id: 'm-in' })] }, { configurable: { thread_id: 't1' }, durability: 'sync' }),
    (err) => err.code === 'SQLITE_FULL');
  assert.equal(ck.sleeps.length, 0);
  assert.ok(!ck.marks.some((m) => m.startsWith('__start__ done')), ck.marks.join('\n'));
  assert.equal(saver.db.inTransaction, false);
  saver.db.close();
});

test('reproducibleIds: the same ids from the same clock and seed, others from another seed', async () => {
  // In a child process: it changes globals.
  const script = `
    import { reproducibleIds } from './chaoskit-langgraph.mjs';
    import { uuid6 } from '@langchain/langgraph-checkpoint';
    import { v4 } from '@langchain/core/utils/uuid';
    const seed = BigInt(process.argv[1]);
    await reproducibleIds({ now: async () => new Date(1700000000000), random: async () => seed });
    console.log(JSON.stringify({ now: Date.now(), ids: [uuid6(-1), uuid6(0), uuid6(1)], v4: v4(), uuid: crypto.randomUUID() }));
  `;
  const { execFileSync } = await import('node:child_process');
  const run = (seed) => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script, String(seed)], { cwd: import.meta.dirname }).toString());
  const a = run(7);
  const b = run(7);
  const c = run(8);
  assert.deepEqual(a, b);
  assert.equal(a.now, 1700000000000);
  assert.notDeepEqual(a.ids, c.ids);
  assert.deepEqual([...a.ids].sort(), a.ids, 'ids made later sort later');
  assert.match(a.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test("SqliteSaver commits a node's writes before the checkpoint after it: the order 'serial' keeps", async () => {
  const order = [];
  class Recording extends SqliteSaver {
    async put(config, checkpoint, metadata, newVersions) {
      const saved = await super.put(config, checkpoint, metadata, newVersions);
      order.push(`checkpoint step ${metadata.step}`);
      return saved;
    }

    async putWrites(config, writes, taskId, taskPath = '') {
      await super.putWrites(config, writes, taskId, taskPath);
      order.push(`${taskPath.split(', ').at(-1)} writes`);
    }
  }
  const saver = new Recording(new Database(':memory:'));
  await twoNodes(saver).invoke({ messages: [] }, { configurable: { thread_id: 't1' }, durability: 'sync' });
  assert.deepEqual(order, [
    'checkpoint step -1', '__start__ writes', 'checkpoint step 0', 'a writes', 'checkpoint step 1', 'b writes', 'checkpoint step 2',
  ]);
  const ck = fakeClient();
  const serial = openSaver(ck);
  await twoNodes(serial).invoke({ messages: [] }, { configurable: { thread_id: 't1' }, durability: 'sync' });
  serial.db.close();
  assert.deepEqual(ck.marks, order.map((o) => (o.startsWith('checkpoint')
    ? `checkpoint t1 step ${o.split(' ').at(-1)}`
    : `${o.split(' ')[0]} done t1 step ${{ __start__: 0, a: 1, b: 2 }[o.split(' ')[0]]}`)));
});

test("LangGraph.js does not wait for a node's writes before the checkpoint after it: 'put-first' completes", async () => {
  const ck = fakeClient();
  const saver = openSaver(ck, { order: 'put-first' });
  const out = await twoNodes(saver).invoke({ messages: [] }, { configurable: { thread_id: 't1' }, durability: 'sync' });
  saver.db.close();
  assert.deepEqual(out.messages.map((m) => m.content), ['a', 'b']);
  assert.deepEqual(ck.marks, [
    'checkpoint t1 step -1', 'checkpoint t1 step 0', '__start__ done t1 step 0',
    'checkpoint t1 step 1', 'a done t1 step 1', 'checkpoint t1 step 2', 'b done t1 step 2',
  ]);
  assert.throws(() => openSaver(ck, { order: 'sideways' }), /unknown order sideways/);
});
