// nodetest.mjs tests a harness under chaoskit from Node's built-in test runner (node:test), a test
// per fault schedule. It sits beside the client (chaoskit.mjs), which the harness itself uses, and
// like it needs nothing beyond Node (>= 20):
//
//	import { check } from '@chaoskit/client/nodetest'; // or './nodetest.mjs', copied
//
//	check('orders survive crashes', {
//	  exec: ['node', 'app.mjs'],
//	  tools: { create_po: 'idempotent-by-key,latency=1s' },
//	  state: ['node', 'app.mjs', '--dump-state'],
//	  faults: ['kill', 'tool'],
//	});
//
// check() defines a suite with a test per case of the campaign, named for its schedule (kill@3,
// tool-timeout@4): `node --test --test-name-pattern '^kill@3$'` runs one. A failing case throws
// the properties it broke, the beats around the fault and two commands that replay it: the
// node --test one and `chaoskit replay`. With `out` (or CHAOSKIT_OUT) it writes the campaign's
// report directory, the one `chaoskit run` writes, to OUT/NAME, for `chaoskit gate`.
//
// It runs the chaoskit command (on PATH, or CHAOSKIT_BIN, or options.chaoskit): `chaoskit run
// --list` to learn the cases, then one `chaoskit run --stream` for the cases the runner will run,
// so the cases and verdicts are those of `chaoskit run` with the same options.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { after, describe, it } from 'node:test';

/** How to install the chaoskit command, for the error that says it is missing. */
const INSTALL = 'go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest';

/** The options of check() that are chaoskit run's flags, as check() spells them. */
const FLAGS = ['exec', 'name', 'tools', 'http', 'cassette', 'state', 'upgrade', 'upgradeState', 'grace', 'faults', 'ignore', 'disk', 'beats', 'mode', 'cases', 'seed', 'restart', 'parallel', 'env', 'dir'];

/** What check() takes besides the flags. */
const OTHERS = ['out', 'chaoskit', 'workers']; // workers: parallel's old name

/**
 * Defines a suite named `name` with a test per case of the chaoskit campaign that `options`
 * describe, each named for its schedule; a case that does not pass fails its test.
 * @param {string} name the suite's name, and its report directory's under `out`
 * @param {import('./nodetest.d.ts').CheckOptions} options the campaign, as chaoskit run takes it
 * @returns {Promise<void>} the suite's, as describe() returns it
 */
export function check(name, options) {
  if (typeof name !== 'string' || name === '') throw new TypeError(`chaoskit: check: the suite's name must be a non-empty string, got ${String(name)}`);
  const campaign = new Campaign(name, options);
  return describe(name, async () => {
    await campaign.list();
    after(() => campaign.close());
    if (campaign.error) {
      it('golden', async () => {
        await campaign.finishRefused();
        throw failure(campaign.error);
      });
      return;
    }
    for (const c of campaign.cases) {
      it(c.schedule, async (t) => {
        let got;
        try {
          got = await campaign.result(c.id);
        } catch (e) {
          if (!(e instanceof Stopped)) throw e;
          t.skip(e.message); // not run, not failed: the run was stopped
          return;
        }
        if (got.verdict !== 'pass') throw failure(render(got, campaign.seed, nodeReplay(c.schedule)));
      });
    }
    if (campaign.undecided.length > 0) { // what chaoskit run would exit 3 for fails a test of its own
      it('undecided', () => {
        throw failure(`${campaign.undecided.join('\n')}\n  leave them out of faults (chaoskit run exits 3 for this campaign)`);
      });
    }
  });
}

/**
 * An Error whose whole text is message: what a test runner shows of a failing case.
 * @param {string} message
 */
function failure(message) {
  const err = new Error(message);
  err.name = 'ChaoskitFailure';
  err.stack = `${err.name}: ${message}`;
  return err;
}

/** Why a case was not run: a signal stopped chaoskit run before it got to it. */
class Stopped extends Error {}

/** chaoskit's exit codes when a signal stopped it, and the signals. */
const SIGNALS = new Map([[130, 'SIGINT'], [143, 'SIGTERM']]);

/** @type {Set<Batch>} the chaoskit runs under way, which a signal to this process stops first */
const running = new Set();

/** @type {NodeJS.Signals | null} the signal this process is stopping for */
let stopping = null;

/**
 * SIGINT or SIGTERM while chaoskit runs: stops the runs (they got the signal too if it went to
 * the process group, as Ctrl-C's does; then this one ends them at once), waits for them to end,
 * which removes their temporary directories, and then lets the signal end this process as it
 * would have.
 * @param {NodeJS.Signals} sig
 */
function onSignal(sig) {
  if (stopping) return;
  stopping = sig;
  const batches = [...running];
  for (const b of batches) b.child?.kill(sig);
  Promise.all(batches.map((b) => b.ended)).then(() => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    process.kill(process.pid, sig);
  });
}

/**
 * Counts b among the runs under way, or no more, listening for signals while there is one.
 * @param {Batch} b
 * @param {boolean} on
 */
function track(b, on) {
  if (on) {
    if (running.size === 0 && !stopping) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    }
    running.add(b);
    return;
  }
  running.delete(b);
  if (running.size === 0 && !stopping) {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/**
 * Returns the flags of chaoskit run that `o` describes.
 * @param {Record<string, any>} o
 * @param {string} baseDir what a relative `dir` or `cassette` is relative to, and dir's default
 * @returns {string[]}
 */
function flags(o, baseDir) {
  if (o === null || typeof o !== 'object') throw new TypeError('chaoskit: check: options must be an object');
  for (const k of Object.keys(o)) {
    if (!FLAGS.includes(k) && !OTHERS.includes(k)) throw new TypeError(`chaoskit: check: unknown option ${k} (it takes ${[...FLAGS, ...OTHERS].join(', ')})`);
  }
  const out = ['--exec', command(o.exec, 'exec')];
  if (o.name) out.push('--name', String(o.name));
  for (const t of pairs(o.tools, 'tools')) out.push('--tool', t);
  for (const r of pairs(o.http, 'http')) out.push('--http', r);
  if (o.cassette !== undefined) {
    if (typeof o.cassette !== 'string' || o.cassette === '') throw new TypeError(`chaoskit: check: cassette must be a file's path, got ${String(o.cassette)}`);
    out.push('--cassette', path.resolve(baseDir, o.cassette));
  }
  if (o.state !== undefined) out.push('--state', command(o.state, 'state'));
  if (o.upgrade !== undefined) out.push('--upgrade-exec', command(o.upgrade, 'upgrade'));
  if (o.upgradeState !== undefined) out.push('--upgrade-state', command(o.upgradeState, 'upgradeState'));
  if (o.faults !== undefined) out.push('--faults', Array.isArray(o.faults) ? o.faults.join(',') : String(o.faults));
  for (const p of list(o.ignore, 'ignore')) out.push('--ignore', p);
  for (const f of ['grace', 'disk', 'beats', 'mode', 'restart']) if (o[f] !== undefined) out.push(`--${f}`, String(o[f]));
  for (const f of ['cases', 'seed', 'parallel', 'workers']) {
    if (o[f] === undefined) continue;
    if (!Number.isSafeInteger(o[f]) || o[f] < 0) throw new TypeError(`chaoskit: check: ${f} must be a whole number, got ${String(o[f])}`);
    out.push(`--${f === 'workers' ? 'parallel' : f}`, String(o[f]));
  }
  for (const e of pairs(o.env, 'env')) out.push('--env', e);
  out.push('--dir', path.resolve(baseDir, o.dir ?? '.'));
  return out;
}

/**
 * A command as one command line: words quoted for a POSIX shell, or the line as given.
 * @param {unknown} v
 * @param {string} what
 */
function command(v, what) {
  if (typeof v === 'string' && v.trim() !== '') return v;
  if (Array.isArray(v) && v.length > 0 && v.every((w) => typeof w === 'string')) return v.map(quote).join(' ');
  throw new TypeError(`chaoskit: check: ${what} must be a command: an array of words or a command line, got ${String(v)}`);
}

/**
 * Quotes a word for a POSIX shell, as chaoskit reads a command line back.
 * @param {string} w
 */
function quote(w) {
  return /^[A-Za-z0-9/._@%+=:,-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`;
}

/**
 * An object as NAME=VALUE strings, or an array of strings as it is.
 * @param {unknown} v
 * @param {string} what
 * @returns {string[]}
 */
function pairs(v, what) {
  if (v === undefined) return [];
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) return Object.entries(v).map(([k, x]) => `${k}=${x}`);
  return list(v, what);
}

/**
 * @param {unknown} v
 * @param {string} what
 * @returns {string[]}
 */
function list(v, what) {
  if (v === undefined) return [];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v;
  throw new TypeError(`chaoskit: check: ${what} must be an array of strings (or an object of them), got ${String(v)}`);
}

/** The test file, as node --test runs it. */
const testFile = process.argv[1] ?? '';

/**
 * The node --test command that runs the case with this schedule again, from where the runner
 * was started.
 * @param {string} schedule
 */
function nodeReplay(schedule) {
  const file = testFile ? path.relative(process.cwd(), testFile) || testFile : 'TEST_FILE';
  return `node --test --test-name-pattern ${quote(`^${schedule.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)} ${quote(file)}`;
}

/**
 * The test name patterns the runner was given (--test-name-pattern), as it reads them, or null.
 * @returns {RegExp[] | null}
 */
function namePatterns() {
  const out = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    let v;
    if (argv[i] === '--test-name-pattern' && i + 1 < argv.length) v = argv[++i];
    else if (argv[i].startsWith('--test-name-pattern=')) v = argv[i].slice('--test-name-pattern='.length);
    if (v === undefined) continue;
    const m = /^\/(.*)\/([a-z]*)$/s.exec(v);
    out.push(m ? new RegExp(m[1], m[2]) : new RegExp(v));
  }
  return out.length > 0 ? out : null;
}

/** One campaign: listed when its suite is built, then run in batches of the cases that run. */
class Campaign {
  /**
   * @param {string} name
   * @param {Record<string, any>} options
   */
  constructor(name, options) {
    this.name = name;
    this.flags = flags(options, testFile ? path.dirname(testFile) : process.cwd());
    this.seed = options.seed ?? 1;
    this.bin = options.chaoskit ?? process.env.CHAOSKIT_BIN ?? 'chaoskit';
    const out = options.out ?? process.env.CHAOSKIT_OUT;
    this.reportDir = out ? path.resolve(out, name.replace(/[^\w.@+-]/g, '_')) : null;
    /** @type {{target: string, id: string, index: number, schedule: string}[]} */
    this.cases = [];
    /** @type {string | null} why the campaign could not be listed */
    this.error = null;
    /** @type {string[]} what chaoskit run --list said nothing will be decided about */
    this.undecided = [];
    /** @type {Map<string, Promise<any>>} each case's result, by ID, once a batch runs it */
    this.results = new Map();
    /** @type {Batch[]} */
    this.batches = [];
  }

  /** Lists the cases (chaoskit run --list), or sets this.error. */
  async list() {
    const r = await run(this.bin, ['run', '--list', ...this.flags]);
    if (r.code !== 0) {
      this.error = `${r.err.trim() || `chaoskit run --list exited ${r.code}`}\n  the same from the command line: chaoskit run ${this.flags.map(quote).join(' ')}`;
      return;
    }
    this.cases = r.out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
    this.undecided = r.err.split('\n').filter((l) => l.startsWith('chaoskit: nothing will be decided'));
  }

  /**
   * The case with this ID, as report.json holds it, run in a batch with the cases after it that
   * the runner will run.
   * @param {string} id
   */
  result(id) {
    if (!this.results.has(id)) {
      const patterns = namePatterns();
      const at = this.cases.findIndex((c) => c.id === id);
      const todo = this.cases.slice(at).filter((c, i) => i === 0 || (!this.results.has(c.id) &&
        (patterns === null || patterns.some((re) => re.test(c.schedule) || re.test(this.name)))));
      const all = todo.length === this.cases.length;
      this.batches.push(new Batch(this, all ? [] : todo.map((c) => c.id), this.batches.length === 0 ? this.reportDir : null, todo));
    }
    return /** @type {Promise<any>} */ (this.results.get(id));
  }

  /** For a campaign that could not be listed, runs it when a report is asked, so that the report directory holds the refusal. */
  async finishRefused() {
    if (!this.reportDir || this.batches.length > 0) return;
    const b = new Batch(this, [], this.reportDir, []);
    this.batches.push(b);
    await b.ended;
  }

  /** Waits for the batches to end (they write their report directories) and cleans up. */
  async close() {
    for (const b of this.batches) {
      const code = await b.ended;
      if (b.reportDir && [0, 1, 3].includes(code)) console.log(`chaoskit: ${this.name}: wrote the report directory ${b.reportDir}`);
    }
  }
}

/** One chaoskit run --stream of some of a campaign's cases. */
class Batch {
  /**
   * @param {Campaign} camp
   * @param {string[]} only the IDs to run; all of them when empty
   * @param {string | null} reportDir where the report goes, if asked
   * @param {{id: string}[]} cases the cases it runs, whose results it resolves
   */
  constructor(camp, only, reportDir, cases) {
    this.reportDir = reportDir;
    const tmp = reportDir ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'chaoskit-nodetest-'));
    if (reportDir) fs.mkdirSync(path.dirname(reportDir), { recursive: true });
    const args = ['run', ...camp.flags, '--stream', '--out', reportDir ?? /** @type {string} */ (tmp),
      '--format', reportDir ? 'json,md,junit,html' : 'json'];
    for (const id of only) args.push('--only', id);
    /** @type {Map<string, {resolve: (c: any) => void, reject: (e: Error) => void}>} */
    const pending = new Map();
    for (const c of cases) {
      camp.results.set(c.id, new Promise((resolve, reject) => pending.set(c.id, { resolve, reject })));
      camp.results.get(c.id)?.catch(() => {}); // a case no test awaits fails nothing
    }
    let err = '';
    /** @type {import('node:child_process').ChildProcess | null} */
    this.child = null;
    track(this, true);
    /** @type {Promise<number>} the exit code */
    this.ended = new Promise((resolve) => {
      const child = spawn(camp.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      this.child = child;
      child.stderr.on('data', (d) => { err = (err + d).slice(-4096); });
      readline.createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.trim() === '') return;
        const c = JSON.parse(line);
        pending.get(c.id)?.resolve(c);
        pending.delete(c.id);
      });
      const end = (/** @type {number} */ code, /** @type {string} */ why, /** @type {string | null} */ sig = null) => {
        // A signal stopped it (exit 130 or 143, or killed by a second one): the cases it did not
        // run are skipped, not failed, and the temporary directory with its journal is removed.
        sig ??= SIGNALS.get(code) ?? null;
        for (const p of pending.values()) {
          p.reject(sig ? new Stopped(`not run: chaoskit run was stopped by ${sig}`) : failure(`chaoskit run ${why} before it ran this case: ${err.trim()}`));
        }
        pending.clear();
        if (sig) process.exitCode = 128 + (sig === 'SIGINT' ? 2 : 15); // as a shell reports a command the signal stopped
        if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
        track(this, false);
        resolve(code);
      };
      child.on('error', (e) => end(-1, `could not start (${missing(camp.bin, e)})`));
      child.on('close', (code, signal) => end(code ?? -1, `exited ${code ?? signal}`, signal === 'SIGINT' || signal === 'SIGTERM' ? signal : null));
    });
  }
}

/**
 * What to say when the chaoskit command cannot be started.
 * @param {string} bin
 * @param {NodeJS.ErrnoException} e
 */
function missing(bin, e) {
  if (e.code !== 'ENOENT') return e.message;
  return bin === 'chaoskit'
    ? `the chaoskit command is not on PATH; install it with ${INSTALL} (or set CHAOSKIT_BIN)`
    : `${bin} (CHAOSKIT_BIN or options.chaoskit) is not a command; install chaoskit with ${INSTALL}`;
}

/**
 * Runs a command to its end.
 * @param {string} bin
 * @param {string[]} args
 * @returns {Promise<{code: number, out: string, err: string}>}
 */
function run(bin, args) {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    let err = '';
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', (e) => resolve({ code: -1, out: '', err: `chaoskit: ${missing(bin, e)}` }));
    child.on('close', (code) => resolve({ code: code ?? -1, out: Buffer.concat(out).toString(), err }));
  });
}

/**
 * A failing case as a person reads it: verdict, violations, the beats around the fault, and
 * the commands that replay it.
 * @param {Record<string, any>} c the case, as report.json holds it
 * @param {number} seed
 * @param {string} replay the node --test command that runs it again
 * @returns {string}
 */
function render(c, seed, replay) {
  const indent = (/** @type {string} */ s, /** @type {string} */ p) => s.replaceAll('\n', `\n${p}`);
  let head = `${c.target} under ${c.schedule || 'no fault'} (seed ${seed}): ${c.verdict}`;
  if (c.detected) head += ` (stopped loudly: ${c.detected.split('\n')[0]})`;
  const lines = [head];
  if (c.reason) lines.push(`  ${indent(c.reason, '  ')}`);
  for (const v of c.violations ?? []) lines.push(`  violated ${v.property}: ${indent(v.detail ?? '', '    ')}`);
  const trace = c.trace ?? [];
  if (trace.length > 0) {
    lines.push(trace.some((/** @type {any} */ b) => b.fault) ? '  beats around the fault:' : '  beats (no fault fired):');
    let last = -1;
    for (const b of trace) {
      if (last >= 0 && b.beat > last + 1) lines.push('         ...');
      last = b.beat;
      let row = `  ${b.fault ? '>> ' : '   '}${String(b.beat).padStart(5)}  p${b.process ?? b.attempt ?? 0}  ${b.label ?? ''}`;
      if (b.fault) row += `   <- ${b.fault}`;
      if (b.note) row += `   [${b.note}]`;
      lines.push(row);
    }
  }
  if (c.diff && !(c.violations ?? []).some((/** @type {any} */ v) => (v.detail ?? '').includes(c.diff.trim()))) {
    lines.push(`  diff (-golden +faulty):\n    ${indent(c.diff.trimEnd(), '    ')}`);
  }
  if (c.shrunk && c.shrunk !== c.schedule) {
    lines.push(`  shrunk to ${c.shrunk}: ${String(c.repro).replace(/--schedule ('[^']*'|\S+)\s*$/, `--schedule ${quote(c.shrunk)}`)}`);
  }
  lines.push(`  replay: ${replay}`, `      or: ${c.repro}`);
  return lines.join('\n');
}
