// A program that keeps two files on its state directory and writes both at once, the way
// Node's promise API does it: each write and fsync runs on a thread of libuv's pool, so two of
// them reach the disk from two threads at the same moment. A timer ticks meanwhile. Written as
// a team would, with no chaoskit client: on a FUSE disk its file calls are its beats.
//
// It opens and renames its files one after the other: two creates or renames in one directory
// at once serialize on the directory's lock in the kernel, before any FUSE request, in an order
// chaoskit does not decide (fuseheld.go).
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';

const dir = process.env.CHAOSKIT_STATE_DIR;
const ROUNDS = 3;
const names = ['a.json', 'b.json'];

let ticks = 0;
const timer = setInterval(() => { ticks++; }, 5);
for (let round = 0; round < ROUNDS; round++) {
  const files = [];
  for (const name of names) files.push(await open(join(dir, name + '.tmp'), 'w'));
  await Promise.all(files.map((f, i) => f.writeFile(JSON.stringify({ name: names[i], round }))));
  await Promise.all(files.map((f) => f.sync()));
  for (const f of files) await f.close();
  for (const name of names) await rename(join(dir, name + '.tmp'), join(dir, name));
  await new Promise((r) => setTimeout(r, 20));
}
clearInterval(timer);
console.log(JSON.stringify({ rounds: ROUNDS, ticks }));
