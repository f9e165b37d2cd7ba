// Unit tests of the JavaScript client against a fake chaoskit: a Unix socket server, in this
// process, speaking the protocol of ../PROTOCOL.md as a script says. Run with `node --test`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as chaoskit from './chaoskit.mjs';
import {
  connect, Client, ChaoskitError, ConnectionError, NotUnderChaoskit, errorsByCode, VERSION,
  BadRequestError, VersionError, RateLimitedError, TransientError, DeadlineError,
} from './chaoskit.mjs';

const sleepWall = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every test's time limit: a client that loses a response fails its test instead of hanging. */
const limit = { timeout: 10_000 };

/**
 * Starts a fake chaoskit for the test. answer(req, conn) returns the response to a request:
 * an object, sent as one JSON line with the request's id unless it has its own; a string,
 * written as it is; null, to write nothing; or undefined, for the default answer (the hello
 * accepted, anything else {"ok":true}). Returns the environment to connect with, the request lines
 * received, and whether a request ever arrived before the previous one was answered.
 */
async function fake(t, answer = () => undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'ckjs-'));
  const path = join(dir, 'sock');
  const state = { lines: [], overlapped: false, conns: [] };
  const server = net.createServer((conn) => {
    state.conns.push(conn);
    let buf = '';
    let busy = false;
    const queue = [];
    const next = async () => {
      if (busy || queue.length === 0) return;
      busy = true;
      const line = queue.shift();
      const req = JSON.parse(line);
      let resp = await answer(req, conn);
      if (resp === undefined) resp = req.op === 'hello' ? { ok: true, v: 1, attempt: 2, worker: 1, state_dir: '/state' } : { ok: true };
      if (resp !== null && typeof resp === 'object') resp = JSON.stringify({ id: req.id, ...resp }) + '\n';
      if (typeof resp === 'string' && !conn.destroyed) conn.write(resp);
      busy = false;
      next();
    };
    conn.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) {
        state.lines.push(buf.slice(0, i));
        if (busy || queue.length > 0) state.overlapped = true;
        queue.push(buf.slice(0, i));
      }
      next();
    });
    conn.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(path, resolve));
  t.after(() => {
    for (const c of state.conns) c.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  state.env = { CHAOSKIT_SOCKET: path, CHAOSKIT_TOKEN: 'tok' };
  state.requests = () => state.lines.map((l) => JSON.parse(l));
  return state;
}

test('connect without CHAOSKIT_SOCKET says the process is not under chaoskit', limit, async () => {
  await assert.rejects(connect({ env: {} }), NotUnderChaoskit);
  await assert.rejects(connect({ env: {} }), /CHAOSKIT_SOCKET is not set/);
});

test('connect to a socket nobody listens on is a ConnectionError naming it', limit, async () => {
  await assert.rejects(connect({ env: { CHAOSKIT_SOCKET: '/nonexistent/sock' } }), (err) =>
    err instanceof ConnectionError && err.message.includes('/nonexistent/sock'));
});

test('the hello carries the token, the version and the client; its answer fills the client', limit, async (t) => {
  const srv = await fake(t);
  const c = await connect({ env: srv.env });
  assert.equal(srv.lines[0], `{"id":1,"op":"hello","v":${VERSION},"token":"tok","client":"js/1"}`);
  assert.deepEqual([c.process, c.attempt, c.worker, c.stateDir], [2, 2, 1, '/state']);
  c.close();
});

test('a refused hello rejects connect with its error, and closes the connection', limit, async (t) => {
  const msg = 'the command speaks protocol version 1; this chaoskit speaks version 2';
  const srv = await fake(t, (req, conn) => {
    conn.on('end', () => { srv.ended = true; });
    return { ok: false, error: { code: 'version', message: msg } };
  });
  await assert.rejects(connect({ env: srv.env }), (err) => err instanceof VersionError && err.message === `chaoskit: ${msg}`);
  for (let i = 0; i < 100 && !srv.ended; i++) await sleepWall(5);
  assert.ok(srv.ended, 'the client kept the connection open');

  // A wrong token is answered without an id, as chaoskit does.
  const srv2 = await fake(t, () => '{"ok":false,"error":{"code":"bad_request","message":"wrong token"}}\n');
  await assert.rejects(connect({ env: srv2.env }), BadRequestError);
});

test('requests are one line each, with the protocol\'s field names; BigInts are exact integers', limit, async (t) => {
  const srv = await fake(t, (req) => (req.op === 'acquire'
    ? { ok: true, lease: { name: 'run', holder: 'w0', token: 7, expires_ms: 30000 } }
    : { ok: true }));
  const c = await connect({ env: srv.env });
  await c.call({ tool: 'create_po', key: 'k', fence: (1n << 64n) - 1n, timeoutMs: 5,
    args: { n: 1n << 60n, at: new Date(0), skip: undefined, list: [undefined, 1.5, 'é'] } });
  await c.call({ tool: 'read', ref: 'order-1' });
  await c.lookup('create_po', 'order-1', { timeoutMs: 10 });
  await c.model({ purpose: 'plan', reply: 'ok', latencyMs: 2000, timeoutMs: 60000 });
  await c.sleep(90000);
  await c.sleep(0);
  await c.await('t', { timeoutMs: 10 });
  await c.messages('t');
  const l = await c.acquire('run', 30000);
  await c.renew(l, 30000);
  await c.release(l);
  await c.mark('step 1');
  await c.done({ filed: 3, big: 18446744073709551615n });
  await c.done();
  await c.refuse('cannot tell whether order 7 was filed');
  assert.deepEqual(srv.lines.slice(1), [
    '{"id":2,"op":"call","tool":"create_po","key":"k","args":{"n":1152921504606846976,"at":"1970-01-01T00:00:00.000Z","list":[null,1.5,"é"]},"fence":18446744073709551615,"timeout_ms":5}',
    '{"id":3,"op":"call","tool":"read","ref":"order-1","args":null}',
    '{"id":4,"op":"lookup","tool":"create_po","ref":"order-1","timeout_ms":10}',
    '{"id":5,"op":"model","purpose":"plan","reply":"ok","latency_ms":2000,"timeout_ms":60000}',
    '{"id":6,"op":"sleep","ms":90000}',
    '{"id":7,"op":"sleep"}',
    '{"id":8,"op":"await","topic":"t","timeout_ms":10}',
    '{"id":9,"op":"messages","topic":"t"}',
    '{"id":10,"op":"acquire","name":"run","ttl_ms":30000}',
    '{"id":11,"op":"renew","lease":{"name":"run","holder":"w0","token":7,"expires_ms":30000},"ttl_ms":30000}',
    '{"id":12,"op":"release","lease":{"name":"run","holder":"w0","token":7,"expires_ms":30000}}',
    '{"id":13,"op":"mark","label":"step 1"}',
    '{"id":14,"op":"done","result":{"filed":3,"big":18446744073709551615}}',
    '{"id":15,"op":"done","result":null}',
    '{"id":16,"op":"refuse","reason":"cannot tell whether order 7 was filed"}',
  ]);
  c.close();
});

test('responses answer each method in its own terms', limit, async (t) => {
  const srv = await fake(t, (req) => ({
    call: { ok: true, reply_id: 'create_po-1', replayed: true, topic: 'create_po/1' },
    lookup: req.ref === 'order-1' ? { ok: true, reply_id: 'create_po-1', found: true } : { ok: true, found: false },
    model: { ok: true, text: 'file the order' },
    now: { ok: true, now_ms: 1767225600000 },
    await: { ok: true, messages: [{ topic: 't', body: 'done', seq: 1 }] },
    messages: { ok: true, messages: [] },
  })[req.op] ?? { ok: true });
  const c = await connect({ env: srv.env });
  assert.deepEqual(await c.call({ tool: 'create_po' }), { id: 'create_po-1', replayed: true, topic: 'create_po/1' });
  assert.deepEqual(await c.lookup('create_po', 'order-1'), { id: 'create_po-1', replayed: false, topic: '' });
  assert.equal(await c.lookup('create_po', 'order-2'), null);
  assert.equal(await c.model({ purpose: 'plan' }), 'file the order');
  assert.deepEqual(await c.now(), new Date('2026-01-01T00:00:00Z'));
  assert.deepEqual(await c.await('t'), [{ topic: 't', body: 'done', seq: 1 }]);
  assert.deepEqual(await c.messages('t'), []);
  assert.equal(await c.sleep(1), undefined);
  c.close();
});

test('uint64 values are read exactly, past 2^53, and only where the protocol puts them', limit, async (t) => {
  const body = 'a body that looks like {"value":123456789012345678901,"token":9}';
  const srv = await fake(t, (req) => ({
    random: '{"id":2,"ok":true,"value":18446744073709551615}\n',
    acquire: '{"id":3,"ok":true,"lease":{"name":"run","holder":"w0","token":9007199254740993,"expires_ms":1000}}\n',
    renew: { ok: true, lease: { name: 'run', token: 1 } },
    messages: { ok: true, messages: [{ topic: 't', body, seq: 123456789012 }] },
  })[req.op]);
  const c = await connect({ env: srv.env });
  assert.equal(await c.random(), 18446744073709551615n);
  const l = await c.acquire('run', 1000);
  assert.deepEqual(l, { name: 'run', holder: 'w0', token: 9007199254740993n, expiresMs: 1000 });
  await c.renew(l, 1000);
  assert.match(srv.lines.at(-1), /"token":9007199254740993,/);
  assert.deepEqual(await c.messages('t'), [{ topic: 't', body, seq: 123456789012 }]);
  c.close();
});

test('responses are framed by newlines, however the bytes arrive', limit, async (t) => {
  const text = 'café ☕ — 𝄞';
  const srv = await fake(t, async (req, conn) => {
    if (req.op !== 'model') return undefined;
    // One byte at a time (splitting every multi-byte character), then two responses' worth of
    // bytes in one write is impossible (one request at a time), so the next test covers order.
    const bytes = Buffer.from(JSON.stringify({ id: req.id, ok: true, text }) + '\n');
    for (const b of bytes) {
      conn.write(Buffer.from([b]));
      await sleepWall(0);
    }
    return null;
  });
  const c = await connect({ env: srv.env });
  assert.equal(await c.model({ purpose: 'a' }), text);
  assert.equal(await c.model({ purpose: 'b' }), text);
  c.close();
});

test('concurrent requests are in flight together, each getting its own answer', limit, async (t) => {
  const srv = await fake(t, async (req) => {
    await sleepWall(req.id % 3); // answers take varying time
    if (req.op === 'mark' && req.label === 'fail') return { ok: false, error: { code: 'transient', message: 'no' } };
    return req.op === 'now' ? { ok: true, now_ms: req.id * 1000 } : { ok: true };
  });
  const c = await connect({ env: srv.env });
  const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) =>
    (i % 3 === 0 ? c.now() : c.mark(i === 10 ? 'fail' : `m${i}`))));
  assert.equal(srv.overlapped, true, 'no request was sent before the previous one was answered');
  const reqs = srv.requests().slice(1);
  assert.deepEqual(reqs.map((r) => r.id), Array.from({ length: 30 }, (_, i) => i + 2));
  assert.deepEqual(reqs.map((r) => r.label ?? r.op), Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? 'now' : i === 10 ? 'fail' : `m${i}`)));
  results.forEach((r, i) => {
    if (i === 10) assert.ok(r.status === 'rejected' && r.reason instanceof TransientError);
    else if (i % 3 === 0) assert.deepEqual(r.value, new Date((i + 2) * 1000));
    else assert.equal(r.status, 'fulfilled');
  });
  c.close();
});

test('responses are matched by id, whatever their order', limit, async (t) => {
  const held = [];
  const srv = await fake(t, (req, conn) => {
    if (req.op === 'hello') return undefined;
    held.push(req);
    if (held.length < 3) return null; // held: answered below, in the reverse order
    for (const r of held.reverse()) conn.write(JSON.stringify({ id: r.id, ok: true, text: r.purpose }) + '\n');
    return null;
  });
  const c = await connect({ env: srv.env });
  assert.deepEqual(await Promise.all(['a', 'b', 'c'].map((purpose) => c.model({ purpose }))), ['a', 'b', 'c']);
  c.close();
});

test('every error code rejects with its class, a ChaoskitError with the code', limit, async (t) => {
  let code = '';
  const srv = await fake(t, (req) => (req.op === 'hello' ? undefined : {
    ok: false, error: { code, message: `failed: ${code}`, ...(code === 'rate_limited' ? { retry_after_ms: 1500 } : {}) },
  }));
  const c = await connect({ env: srv.env });
  const codes = Object.keys(errorsByCode);
  assert.deepEqual(codes, ['transient', 'ambiguous', 'timeout', 'fenced', 'key_reused', 'lease_held', 'lease_lost', 'rate_limited',
    'model_server', 'context_length', 'deadline', 'bad_request', 'version']);
  for (code of codes) {
    const err = await c.sleep(1).then(() => null, (e) => e);
    const cls = errorsByCode[code];
    assert.ok(err instanceof cls && err instanceof ChaoskitError && err instanceof Error, code);
    assert.equal(err.code, code);
    assert.equal(cls.code, code);
    assert.equal(err.name, cls.name);
    assert.equal(err.message, `chaoskit: failed: ${code}`);
    assert.equal(err.retryAfterMs, code === 'rate_limited' ? 1500 : 0);
  }
  assert.ok(new RateLimitedError('x', 20) instanceof ChaoskitError);
  for (code of ['something_new', 'constructor', '__proto__']) {
    const err = await c.sleep(1).then(() => null, (e) => e);
    assert.ok(err.constructor === ChaoskitError && err.code === code, code);
  }
  c.close();

  const srv2 = await fake(t, (req) => (req.op === 'hello' ? undefined : { ok: false }));
  const c2 = await connect({ env: srv2.env });
  await assert.rejects(c2.mark('x'), (e) => e instanceof BadRequestError && /mark: refused without a reason/.test(e.message));
  c2.close();
});

test('a response to another request, or a malformed one, fails the client for good', limit, async (t) => {
  for (const bad of ['{"id":99,"ok":true}\n', '{"ok":tru\n', '[1]\n', '{"id":2,"ok":true,"value":1.5}\n']) {
    const srv = await fake(t, (req) => (req.op === 'hello' ? undefined : bad));
    const c = await connect({ env: srv.env });
    await assert.rejects(c.random(), ConnectionError, bad);
    await assert.rejects(c.mark('later'), ConnectionError);
    assert.equal(srv.lines.length, 2, 'a request was sent on a broken connection');
  }
});

test('the connection closing under a request rejects it and every later one', limit, async (t) => {
  const srv = await fake(t, (req, conn) => {
    if (req.op === 'sleep') conn.destroy();
    return req.op === 'sleep' ? null : undefined;
  });
  const c = await connect({ env: srv.env });
  await assert.rejects(c.sleep(10), (e) => e instanceof ConnectionError && /closed/.test(e.message));
  await assert.rejects(c.mark('x'), ConnectionError);
});

test('close() makes later requests fail', limit, async (t) => {
  const srv = await fake(t);
  const c = await connect({ env: srv.env });
  c.close();
  await assert.rejects(c.now(), /the client was closed/);
});

test('misuse is refused before anything is sent, naming the field', limit, async (t) => {
  const srv = await fake(t);
  const c = await connect({ env: srv.env });
  await assert.rejects(c.sleep(1.5), /sleep: ms must be a whole number of milliseconds from 0 to 31536000000/);
  await assert.rejects(c.sleep(-1), RangeError);
  await assert.rejects(c.sleep(31_536_000_001), RangeError); // past a year: chaoskit would fail the process
  await assert.rejects(c.acquire('run', 1e13), /acquire: ttlMs/);
  await assert.rejects(c.model({ purpose: 'p', latencyMs: 1e13 }), /model: latencyMs/);
  await assert.rejects(c.await('t', { timeoutMs: 2 ** 53 }), /await: timeoutMs must be a whole number of milliseconds from 0 to 9007199254740991/);
  await assert.rejects(c.call({}), /call: tool must be a non-empty string/);
  await assert.rejects(c.call({ tool: 'x', fence: -1 }), /call: fence must be a uint64/);
  await assert.rejects(c.call({ tool: 'x', fence: 1n << 64n }), RangeError);
  await assert.rejects(c.call({ tool: 'x', args: { self: null, big: Symbol('s') }, timeoutMs: '5' }), /timeoutMs/);
  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  await assert.rejects(c.call({ tool: 'x', args: cyclic }), /cyclic/);
  await assert.rejects(c.model({ reply: 'x' }), /model: purpose/);
  await assert.rejects(c.renew({ token: 1n }, 10), /renew: want the lease/);
  await assert.rejects(c.mark(''), TypeError);
  await assert.rejects(c.lookup('create_po'), /lookup: ref must be a non-empty string/);
  await assert.rejects(c.refuse(), /refuse: reason/);
  await assert.rejects(c.await(undefined), TypeError);
  assert.equal(srv.lines.length, 1, `sent: ${srv.lines.slice(1)}`);
  assert.equal(await c.mark('fine'), undefined, 'the client is still usable');
  await c.await('t', { timeoutMs: Number.MAX_SAFE_INTEGER }); // "forever": chaoskit counts it as a year
  assert.equal(srv.lines.at(-1), '{"id":3,"op":"await","topic":"t","timeout_ms":9007199254740991}');
  c.close();
});

test('an idle client does not keep the process alive: a harness ends without close()', limit, async (t) => {
  const srv = await fake(t);
  const script = `import { connect } from ${JSON.stringify(new URL('./chaoskit.mjs', import.meta.url).href)};
    const c = await connect(); await c.done({ ok: 1 }); console.log('sent');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, ...srv.env }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  const [status, signal] = await new Promise((resolve) => child.on('exit', (s, sig) => resolve([s, sig])));
  clearTimeout(timer);
  assert.deepEqual([status, signal, out.trim()], [0, null, 'sent']);
  assert.equal(srv.lines.at(-1), '{"id":2,"op":"done","result":{"ok":1}}');
});

test('the error classes can be told apart without instanceof, by code', limit, () => {
  const e = new DeadlineError('late');
  assert.deepEqual([e.code, e.name, e.message, e instanceof ChaoskitError], ['deadline', 'DeadlineError', 'chaoskit: late', true]);
  assert.equal(Object.isFrozen(errorsByCode), true);
});

test('nodetest.d.ts declares what nodetest.mjs exports', limit, async () => {
  const dts = readFileSync(new URL('./nodetest.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export declare (?:const|class|function) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual(declared.sort(), Object.keys(await import('./nodetest.mjs')).sort());
});

test('chaoskit.d.ts declares what chaoskit.mjs exports, and every method of Client', limit, () => {
  const dts = readFileSync(new URL('./chaoskit.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export declare (?:const|class|function) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual(declared.sort(), Object.keys(chaoskit).sort());
  const body = dts.slice(dts.indexOf('export declare class Client {'));
  const methods = [...body.slice(0, body.indexOf('\n}')).matchAll(/^ {2}(\w+)\(/gm)].map((m) => m[1]);
  const own = Object.getOwnPropertyNames(Client.prototype).filter((n) => n !== 'constructor');
  assert.deepEqual(methods.sort(), own.sort());
});
