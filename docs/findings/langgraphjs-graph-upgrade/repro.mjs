// repro.mjs GRAPH STOP DB: runs graph GRAPH on thread "t" of the SqliteSaver database DB, resuming
// the thread when it has a checkpoint (invoke(null), as a restarted process does). No tools, no
// model: each node appends its name to the state's log.
//
//   GRAPH  v1        lookup → refund → notify
//          insert    lookup → approve → refund → notify          (a node between two)
//          migrate   insert, and a thread past lookup without approval is first written to as
//                    lookup (updateState(config, {}, 'lookup')), which routes it by the new edges
//          append    lookup → refund → notify → survey           (a node after the last)
//          rename    lookup → refund → email                     (notify renamed)
//   STOP   none, or where v1's process dies (process.exit, as a SIGKILL: nothing after it runs):
//          at:refund     at the start of refund: the checkpoint after lookup is saved
//          after:lookup  once lookup's writes are saved (putWrites), before its step's checkpoint
import { StateGraph, Annotation, START, END } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import Database from 'better-sqlite3';

const [graphName, stop, file] = process.argv.slice(2);
const nodes = {
  v1: ['lookup', 'refund', 'notify'],
  insert: ['lookup', 'approve', 'refund', 'notify'],
  migrate: ['lookup', 'approve', 'refund', 'notify'],
  append: ['lookup', 'refund', 'notify', 'survey'],
  rename: ['lookup', 'refund', 'email'],
}[graphName];
if (!nodes) throw new Error(`unknown graph ${graphName}`);

/** SqliteSaver, dying after the writes of the node named by STOP after:NODE are saved. */
class Saver extends SqliteSaver {
  async putWrites(config, writes, taskId) {
    await super.putWrites(config, writes, taskId);
    const node = writes.find(([chan]) => chan === 'log')?.[1]?.[0];
    if (stop === `after:${node}`) process.exit(9);
  }
}
const saver = new Saver(new Database(file));
const State = Annotation.Root({ log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });
let graph = new StateGraph(State);
for (const name of nodes) {
  graph = graph.addNode(name, async (_, config) => {
    if (stop === `at:${name}`) process.exit(9);
    console.log(`  ran ${name} (step ${config.metadata.langgraph_step})`);
    return { log: [name] };
  });
}
graph = graph.addEdge(START, nodes[0]);
for (let i = 1; i < nodes.length; i++) graph = graph.addEdge(nodes[i - 1], nodes[i]);
const app = graph.addEdge(nodes.at(-1), END).compile({ checkpointer: saver });

const config = { configurable: { thread_id: 't' }, durability: 'sync' };
const tuple = await saver.getTuple(config);
if (tuple) {
  const { channel_versions: versions, versions_seen: seen } = tuple.checkpoint;
  const state = await app.getState(config);
  console.log(`  thread: checkpoint of step ${tuple.metadata.step}; channel_versions ${JSON.stringify(versions)}`);
  console.log(`    versions_seen ${JSON.stringify(seen)}`);
  console.log(`    pending writes ${JSON.stringify((tuple.pendingWrites ?? []).map(([, chan]) => chan))}`);
  console.log(`    getState: values ${JSON.stringify(state.values.log)}, next ${JSON.stringify(state.next)}, tasks ${JSON.stringify(state.tasks.map((t) => t.name))}`);
  if (graphName === 'migrate' && state.values.log.includes('lookup') && !state.values.log.includes('approve') && !state.values.log.includes('refund')) {
    await app.updateState(config, {}, 'lookup');
    console.log(`    migrated: next ${JSON.stringify((await app.getState(config)).next)}`);
  }
}
const out = await app.invoke(tuple ? null : {}, config);
console.log(`  ${graphName} ended: log ${JSON.stringify(out.log)}, next ${JSON.stringify((await app.getState(config)).next)}`);
