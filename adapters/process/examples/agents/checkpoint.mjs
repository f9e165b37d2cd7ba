// checkpoint.mjs: the durable file both Node agents' teams would write for themselves: a JSON
// document saved atomically and durably, and read back on start.
import fs from 'node:fs';
import path from 'node:path';

/** The directory of durable state: chaoskit's CHAOSKIT_STATE_DIR, else ./state. */
export function stateDir() {
  const dir = process.env.CHAOSKIT_STATE_DIR || path.resolve('state');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Reads the document saved under name, or undefined before the first save. */
export function load(dir, name) {
  let text;
  try {
    text = fs.readFileSync(path.join(dir, name), 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text); // a checkpoint that does not parse fails loudly, never starts over
}

/**
 * Saves doc under name so that a crash or a power cut leaves either the old document or the
 * new one, whole: write a temporary file, fsync it, rename it over the old one, fsync the
 * directory (the rename is an entry of the directory, durable only once the directory is).
 */
export function save(dir, name, doc) {
  const file = path.join(dir, name);
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, JSON.stringify(doc));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const dfd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
}
