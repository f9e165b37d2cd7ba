// chaoskit.mjs is the JavaScript client of chaoskit's process protocol (../PROTOCOL.md): what a
// harness written for Node (>= 20) uses, when it runs under `chaoskit run --exec` or as a
// process.Target, to reach chaoskit's world of tools, model, virtual time, leases and messages,
// and to mark its progress. It is one file with no dependency beyond Node itself, so that it can
// be copied into any project; it mirrors the Go client (../client/client.go).
//
//	import { connect, TransientError } from './chaoskit.mjs';
//	const ck = await connect();
//	const reply = await ck.call({ tool: 'create_po', key: 'po-1', args: { usd: 84000 } });
//	await ck.mark('po 1 filed');
//	await ck.done({ po: reply.id });
//
// Most requests are beats, at which chaoskit may SIGKILL the process: the promise then never
// settles. Requests are sent at once, each with an id of its own, and answered by id, so calls
// made together (Promise.all) are in flight together, and chaoskit admits them in a canonical
// order, the same in every run. The socket keeps the process alive only while a request is in
// flight, so a harness ends when its work does, without close(). Under chaoskit, setTimeout and
// Date.now run on virtual time (PROTOCOL.md, "Time").
//
// The protocol's uint64 values (random numbers, lease and fencing tokens) are BigInts: they are
// read from the response text exactly, never through a float.

import net from 'node:net';

/** The protocol version the client speaks. */
export const VERSION = 1;

/** The longest line, in bytes, either side may send. */
export const MAX_LINE = 16 << 20;

const CLIENT_NAME = `js/${VERSION}`;
const MAX_UINT64 = (1n << 64n) - 1n;

/**
 * The longest duration chaoskit takes, in milliseconds: a year of virtual time. It refuses a
 * longer sleep, latency or lease (the process fails), so the client throws first; a longer
 * timeout counts as a year, so the client sends it as it is ("forever" works).
 */
const MAX_MILLIS = 31_536_000_000;

/** Thrown by connect() when the process was not started by chaoskit (CHAOSKIT_SOCKET is unset). */
export class NotUnderChaoskit extends Error {
  constructor() {
    super('chaoskit: CHAOSKIT_SOCKET is not set: not running under chaoskit');
    this.name = 'NotUnderChaoskit';
  }
}

/**
 * A failure of the connection itself, not an answer of chaoskit's: the socket could not be
 * reached or closed, or a response was malformed or answered another request. The client is
 * unusable after it.
 */
export class ConnectionError extends Error {
  /**
   * @param {string} message what went wrong
   * @param {{cause?: unknown}} [options] the underlying error
   */
  constructor(message, options) {
    super(`chaoskit: ${message}`, options);
    this.name = 'ConnectionError';
  }
}

/**
 * An error chaoskit answered a request with. `code` is the protocol's stable error code; each
 * code has its subclass (errorsByCode), so `err instanceof TransientError` and
 * `err.code === 'transient'` say the same. A code this client does not know yet is a plain
 * ChaoskitError.
 */
export class ChaoskitError extends Error {
  /**
   * @param {string} code the protocol's error code, e.g. "transient"
   * @param {string} message chaoskit's explanation, for people
   * @param {number} [retryAfterMs] for rate_limited: how long to wait before retrying
   */
  constructor(code, message, retryAfterMs = 0) {
    super(`chaoskit: ${message}`);
    this.name = 'ChaoskitError';
    /** The protocol's error code. @type {string} */
    this.code = code;
    /** How long to wait before retrying, in milliseconds of virtual time (rate_limited). @type {number} */
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * Defines the subclass of ChaoskitError for one code.
 * @param {string} name the class's name
 * @param {string} code the protocol's error code
 */
function errorClass(name, code) {
  const cls = class extends ChaoskitError {
    /**
     * @param {string} message chaoskit's explanation
     * @param {number} [retryAfterMs] for rate_limited: how long to wait before retrying
     */
    constructor(message, retryAfterMs = 0) {
      super(code, message, retryAfterMs);
      this.name = name;
    }
  };
  Object.defineProperty(cls, 'name', { value: name });
  Object.defineProperty(cls, 'code', { value: code, enumerable: true });
  return cls;
}

/** transient: the tool failed before applying the call. Retry, with the same key. */
export const TransientError = errorClass('TransientError', 'transient');
/** ambiguous: the call was applied and its reply lost. Retry with the same key, or look the effect up. */
export const AmbiguousError = errorClass('AmbiguousError', 'ambiguous');
/** timeout: the call's deadline passed; it may still be applied. As ambiguous. */
export const TimeoutError = errorClass('TimeoutError', 'timeout');
/** fenced: the tool has seen a newer fencing token. Stop: another worker has the run. */
export const FencedError = errorClass('FencedError', 'fenced');
/** key_reused: the call's key was first used with other arguments; nothing was applied. A bug: give a call with other arguments a key of its own. */
export const KeyReusedError = errorClass('KeyReusedError', 'key_reused');
/** lease_held: another worker holds the lease. Wait and try again. */
export const LeaseHeldError = errorClass('LeaseHeldError', 'lease_held');
/** lease_lost: the lease expired or was taken over. Stop acting for it. */
export const LeaseLostError = errorClass('LeaseLostError', 'lease_lost');
/** rate_limited: the model is rate limited. Retry after `retryAfterMs`. */
export const RateLimitedError = errorClass('RateLimitedError', 'rate_limited');
/** model_server: the model failed (500). Retry, with backoff. */
export const ModelServerError = errorClass('ModelServerError', 'model_server');
/** context_length: the model refused a context too long. Shorten the prompt. */
export const ContextLengthError = errorClass('ContextLengthError', 'context_length');
/** deadline: a wait's timeoutMs passed (await, model). */
export const DeadlineError = errorClass('DeadlineError', 'deadline');
/** bad_request: chaoskit refused the request; the process is failed with this message. */
export const BadRequestError = errorClass('BadRequestError', 'bad_request');
/** version: chaoskit does not speak the client's protocol version; the process is failed. */
export const VersionError = errorClass('VersionError', 'version');

/** The subclasses of ChaoskitError by protocol error code. */
export const errorsByCode = Object.freeze({
  transient: TransientError,
  ambiguous: AmbiguousError,
  timeout: TimeoutError,
  fenced: FencedError,
  key_reused: KeyReusedError,
  lease_held: LeaseHeldError,
  lease_lost: LeaseLostError,
  rate_limited: RateLimitedError,
  model_server: ModelServerError,
  context_length: ContextLengthError,
  deadline: DeadlineError,
  bad_request: BadRequestError,
  version: VersionError,
});

/**
 * Connects to the chaoskit that started the process, as the environment names it, and says
 * hello.
 * @param {{env?: Record<string, string | undefined>}} [options] where to find CHAOSKIT_SOCKET
 *   and CHAOSKIT_TOKEN (default process.env)
 * @returns {Promise<Client>}
 * @throws {NotUnderChaoskit} when CHAOSKIT_SOCKET is unset
 * @throws {ConnectionError} when the socket cannot be reached
 * @throws {VersionError | BadRequestError} when chaoskit refuses the hello
 */
export async function connect({ env = process.env } = {}) {
  const path = env.CHAOSKIT_SOCKET;
  if (!path) throw new NotUnderChaoskit();
  const sock = await new Promise((resolve, reject) => {
    const s = net.createConnection({ path });
    /** @param {Error} err */
    const refused = (err) => reject(new ConnectionError(`connecting to ${path}: ${err.message}`, { cause: err }));
    s.once('error', refused);
    s.once('connect', () => {
      s.off('error', refused); // from now on the Client listens
      resolve(s);
    });
  });
  return Client[HELLO](sock, env.CHAOSKIT_TOKEN ?? '');
}

/** Guards the Client constructor: clients come from connect(). */
const INTERNAL = Symbol('chaoskit.internal');
/** Names the static method connect() says hello through, out of the API's sight. */
const HELLO = Symbol('chaoskit.hello');

/**
 * @typedef {object} Call One call of a tool.
 * @property {string} tool the tool's name, as declared to chaoskit
 * @property {unknown} [args] what the call does (any JSON; BigInts are written as integers): it
 *   identifies the effect
 * @property {string} [key] the idempotency key: a tool that honours keys applies a key once
 * @property {string} [ref] the harness's own reference for the effect, which the tool keeps with
 *   it for ever (unlike a key, which it may forget): lookup() finds the effect by it
 * @property {bigint | number} [fence] the caller's fencing token, from its Lease, for fenced tools
 * @property {number} [timeoutMs] the call's deadline, in milliseconds of virtual time
 */

/**
 * @typedef {object} Reply A tool's answer.
 * @property {string} id what the call created
 * @property {boolean} replayed the tool recognised the key and returned its earlier reply
 * @property {string} topic an asynchronous tool's completion will be posted there ('' if none)
 */

/**
 * @typedef {object} ModelCall One call of the scripted model.
 * @property {string} purpose names the logical call, e.g. "plan step 3"
 * @property {string} [reply] the scripted answer
 * @property {number} [latencyMs] how long the answer takes, in virtual milliseconds
 * @property {number} [timeoutMs] the call's deadline, in virtual milliseconds
 */

/**
 * @typedef {object} Message A message posted on a topic.
 * @property {string} topic
 * @property {string} body
 * @property {number} seq its number on the topic, from 0
 */

/**
 * @typedef {object} Lease A time-limited claim on a named resource; pass its token to fenced
 *   tools as Call.fence.
 * @property {string} name
 * @property {string} holder
 * @property {bigint} token the fencing token: it grows with every acquisition
 * @property {number} expiresMs when it expires, in Unix milliseconds of virtual time
 */

/** A connection to chaoskit, from connect(). */
export class Client {
  /** The process's number: 0 for the first, one more per process started. @type {number} */
  process = 0;
  /** The process's number under its earlier name. @deprecated use process. @type {number} */
  attempt = 0;
  /** The worker the process belongs to, from 0. @type {number} */
  worker = 0;
  /** The directory to keep durable state in. @type {string} */
  stateDir = '';

  /** @type {net.Socket} */
  #sock;
  /** Received bytes not yet ending a line. @type {Buffer[]} */
  #partial = [];
  #partialLen = 0;
  /** The requests waiting for their responses, by id. @type {Map<number, {resolve: (r: Record<string, any>) => void, reject: (err: Error) => void}>} */
  #pending = new Map();
  /** Why the connection is unusable, once it is. @type {Error | null} */
  #broken = null;
  #lastId = 0;

  /**
   * Clients come from connect().
   * @param {net.Socket} sock
   * @param {symbol} token
   */
  constructor(sock, token) {
    if (token !== INTERNAL) throw new TypeError('chaoskit: use connect() to make a Client');
    this.#sock = sock;
    sock.on('data', (chunk) => this.#read(chunk));
    sock.on('error', (err) => this.#fail(new ConnectionError(`connection: ${err.message}`, { cause: err })));
    sock.on('close', () => this.#fail(new ConnectionError('the connection closed')));
  }

  /**
   * Says hello on a new connection and returns the client, or closes it and throws.
   * @param {net.Socket} sock
   * @param {string} token
   * @returns {Promise<Client>}
   */
  static async [HELLO](sock, token) {
    const c = new Client(sock, INTERNAL);
    try {
      const r = await c.#request({ op: 'hello', v: VERSION, token, client: CLIENT_NAME });
      c.process = r.process ?? r.attempt ?? 0;
      c.attempt = c.process;
      c.worker = r.worker ?? 0;
      c.stateDir = r.state_dir ?? '';
    } catch (err) {
      c.close();
      throw err;
    }
    return c;
  }

  /**
   * Calls a tool. It is two beats: the call leaving the process, and the call applied.
   * @param {Call} call
   * @returns {Promise<Reply>}
   * @throws {TransientError} not applied: retry with the same key
   * @throws {AmbiguousError} the reply was lost: it may have been applied
   * @throws {TimeoutError} the deadline passed: it may still be applied
   * @throws {FencedError} the tool has seen a newer fencing token
   * @throws {KeyReusedError} the key was first used with other arguments
   */
  async call({ tool, args = null, key, ref, fence, timeoutMs } = /** @type {Call} */ ({})) {
    need('call', 'tool', tool);
    const r = await this.#request({
      op: 'call', tool, key: key || undefined, ref: ref || undefined, args, fence: uint64('call', 'fence', fence),
      timeout_ms: timeout('call', 'timeoutMs', timeoutMs),
    });
    return { id: r.reply_id ?? '', replayed: r.replayed ?? false, topic: r.topic ?? '' };
  }

  /**
   * Asks the tool for the effect applied with the reference ref (Call.ref). It is read-only,
   * outlives the tool's memory of keys, and is two beats, like a call.
   * @param {string} tool
   * @param {string} ref
   * @param {{timeoutMs?: number}} [options] timeoutMs: the look-up's deadline, in virtual milliseconds
   * @returns {Promise<Reply | null>} the effect's reply (its id), or null if there is none
   */
  async lookup(tool, ref, { timeoutMs } = {}) {
    need('lookup', 'tool', tool);
    need('lookup', 'ref', ref);
    const r = await this.#request({ op: 'lookup', tool, ref, timeout_ms: timeout('lookup', 'timeoutMs', timeoutMs) });
    return r.found ? { id: r.reply_id ?? '', replayed: false, topic: '' } : null;
  }

  /**
   * Calls the scripted model. It is a beat.
   * @param {ModelCall} call
   * @returns {Promise<string>} the answer
   * @throws {RateLimitedError} retry after its retryAfterMs
   * @throws {ModelServerError | ContextLengthError | DeadlineError}
   */
  async model({ purpose, reply, latencyMs, timeoutMs } = /** @type {ModelCall} */ ({})) {
    need('model', 'purpose', purpose);
    const r = await this.#request({
      op: 'model', purpose, reply: reply || undefined,
      latency_ms: millis('model', 'latencyMs', latencyMs), timeout_ms: timeout('model', 'timeoutMs', timeoutMs),
    });
    return r.text ?? '';
  }

  /**
   * Returns the virtual time. It is not a beat.
   * @returns {Promise<Date>}
   */
  async now() {
    const r = await this.#request({ op: 'now' });
    return new Date(r.now_ms ?? 0);
  }

  /**
   * Waits ms milliseconds of virtual time. It is a beat.
   * @param {number} ms
   * @returns {Promise<void>}
   */
  async sleep(ms) {
    await this.#request({ op: 'sleep', ms: millis('sleep', 'ms', ms) });
  }

  /**
   * Waits until a message is posted on topic, and returns all of the topic's messages. It is a
   * beat.
   * @param {string} topic
   * @param {{timeoutMs?: number}} [options] timeoutMs: a virtual deadline (DeadlineError)
   * @returns {Promise<Message[]>}
   * @throws {DeadlineError}
   */
  async await(topic, { timeoutMs } = {}) {
    need('await', 'topic', topic);
    const r = await this.#request({ op: 'await', topic, timeout_ms: timeout('await', 'timeoutMs', timeoutMs) });
    return r.messages ?? [];
  }

  /**
   * Returns the messages posted on topic so far. It is not a beat.
   * @param {string} topic
   * @returns {Promise<Message[]>}
   */
  async messages(topic) {
    need('messages', 'topic', topic);
    const r = await this.#request({ op: 'messages', topic });
    return r.messages ?? [];
  }

  /**
   * Takes the named lease for ttlMs, unless another worker holds it. It is a beat.
   * @param {string} name
   * @param {number} ttlMs
   * @returns {Promise<Lease>}
   * @throws {LeaseHeldError}
   */
  async acquire(name, ttlMs) {
    need('acquire', 'name', name);
    const r = await this.#request({ op: 'acquire', name, ttl_ms: millis('acquire', 'ttlMs', ttlMs) });
    return leaseOf(r.lease);
  }

  /**
   * Extends a lease by ttlMs from now, unless it was lost. It is a beat.
   * @param {Lease} lease as acquire or renew returned it
   * @param {number} ttlMs
   * @returns {Promise<Lease>}
   * @throws {LeaseLostError}
   */
  async renew(lease, ttlMs) {
    const r = await this.#request({ op: 'renew', lease: leaseJSON('renew', lease), ttl_ms: millis('renew', 'ttlMs', ttlMs) });
    return leaseOf(r.lease);
  }

  /**
   * Gives a lease up. It is a beat.
   * @param {Lease} lease
   * @returns {Promise<void>}
   */
  async release(lease) {
    await this.#request({ op: 'release', lease: leaseJSON('release', lease) });
  }

  /**
   * Declares progress: call it right after a step has become durable, with a label unique to
   * the step. It is a beat.
   * @param {string} label
   * @returns {Promise<void>}
   */
  async mark(label) {
    need('mark', 'label', label);
    await this.#request({ op: 'mark', label });
  }

  /**
   * Returns a number from the process's seeded random source (use it instead of Math.random).
   * It is not a beat.
   * @returns {Promise<bigint>} a uint64
   */
  async random() {
    const r = await this.#request({ op: 'random' });
    return BigInt(r.value ?? 0);
  }

  /**
   * Sends the run's result, which the oracle compares with the golden run's. Exit with status 0
   * after it.
   * @param {unknown} result any JSON (BigInts are written as integers)
   * @returns {Promise<void>}
   */
  async done(result) {
    await this.#request({ op: 'done', result: result === undefined ? null : result });
  }

  /**
   * Records that the harness refuses to go on, not knowing what is safe (an effect it cannot
   * tell was applied, and nothing to look it up by), with the reason a person should read. Exit
   * after it: the run ends there, and passes as refused. It is not a beat.
   * @param {string} reason
   * @returns {Promise<void>}
   */
  async refuse(reason) {
    need('refuse', 'reason', reason);
    await this.#request({ op: 'refuse', reason });
  }

  /** Closes the connection; requests made after it fail with ConnectionError. */
  close() {
    this.#fail(new ConnectionError('the client was closed'));
  }

  /**
   * Sends one request at once, waits for its response, and returns it, or throws the error it
   * carries. Requests made together are in flight together.
   * @param {Record<string, unknown>} req the request, its fields as the protocol names them
   * @returns {Promise<Record<string, any>>}
   */
  async #request(req) {
    if (this.#broken) throw this.#broken;
    const id = this.#lastId + 1;
    const line = /** @type {string} */ (encode({ id, ...req })); // an object always encodes
    if (Buffer.byteLength(line) >= MAX_LINE) {
      throw new RangeError(`chaoskit: ${req.op}: the request is longer than ${MAX_LINE} bytes`);
    }
    this.#lastId = id; // a request refused here takes no id: the ids sent go 1, 2, 3...
    const r = await new Promise((resolve, reject) => {
      if (this.#pending.size === 0) this.#sock.ref(); // a request in flight keeps the process alive; an idle client does not
      this.#pending.set(id, { resolve, reject });
      this.#sock.write(line + '\n');
    });
    if (r.ok === true) return r;
    if (!r.error) throw new BadRequestError(`${req.op}: refused without a reason`);
    const { code, message, retry_after_ms: retryAfterMs = 0 } = r.error;
    if (!Object.hasOwn(errorsByCode, code)) throw new ChaoskitError(code, message, retryAfterMs);
    const cls = errorsByCode[/** @type {keyof typeof errorsByCode} */ (code)];
    throw new cls(message, retryAfterMs);
  }

  /**
   * Takes in bytes from the socket and hands each complete line to the request whose id it
   * carries (a line without an id to the one request in flight).
   * @param {Buffer} chunk
   */
  #read(chunk) {
    let nl;
    while ((nl = chunk.indexOf(0x0a)) >= 0) {
      this.#partial.push(chunk.subarray(0, nl));
      const line = Buffer.concat(this.#partial).toString('utf8');
      this.#partial = [];
      this.#partialLen = 0;
      chunk = chunk.subarray(nl + 1);
      let r;
      try {
        r = parseResponse(line);
      } catch (err) {
        this.#fail(new ConnectionError(`malformed response ${JSON.stringify(line.slice(0, 120))}`, { cause: err }));
        return;
      }
      let id = r.id;
      if (!id && this.#pending.size === 1) id = this.#pending.keys().next().value;
      const p = this.#pending.get(id);
      if (!p) {
        const only = this.#pending.size === 1 ? ` to request ${this.#pending.keys().next().value}` : ' to no request in flight';
        this.#fail(new ConnectionError(`response ${r.id ?? JSON.stringify(line.slice(0, 120))}${only}`));
        return;
      }
      this.#pending.delete(id);
      if (this.#pending.size === 0) this.#sock.unref();
      p.resolve(r);
    }
    if (chunk.length > 0) {
      this.#partial.push(chunk);
      this.#partialLen += chunk.length;
      if (this.#partialLen >= MAX_LINE) this.#fail(new ConnectionError(`a response longer than ${MAX_LINE} bytes`));
    }
  }

  /**
   * Makes the client unusable for err's reason (the first reason given stays), and fails the
   * request in flight with it.
   * @param {Error} err
   * @returns {Error} the reason the client is unusable
   */
  #fail(err) {
    this.#broken ??= err;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(this.#broken);
    if (!this.#sock.destroyed) this.#sock.destroy();
    return this.#broken;
  }
}

/**
 * Throws a TypeError unless v is a non-empty string.
 * @param {string} op
 * @param {string} field
 * @param {unknown} v
 */
function need(op, field, v) {
  if (typeof v !== 'string' || v === '') {
    throw new TypeError(`chaoskit: ${op}: ${field} must be a non-empty string, got ${String(v)}`);
  }
}

/**
 * Checks a duration in milliseconds, up to a year; 0 and undefined are left out of the request.
 * @param {string} op
 * @param {string} field
 * @param {unknown} v
 * @returns {number | undefined}
 */
function millis(op, field, v) {
  return whole(op, field, v, MAX_MILLIS);
}

/**
 * Checks a timeout in milliseconds: any length (chaoskit counts one past a year as a year); 0
 * and undefined are left out of the request.
 * @param {string} op
 * @param {string} field
 * @param {unknown} v
 * @returns {number | undefined}
 */
function timeout(op, field, v) {
  return whole(op, field, v, Number.MAX_SAFE_INTEGER);
}

/**
 * Checks a whole number of milliseconds from 0 to max; 0 and undefined are left out.
 * @param {string} op
 * @param {string} field
 * @param {unknown} v
 * @param {number} max
 * @returns {number | undefined}
 */
function whole(op, field, v, max) {
  if (v === undefined || v === 0) return undefined;
  if (!Number.isSafeInteger(v) || /** @type {number} */ (v) < 0 || /** @type {number} */ (v) > max) {
    throw new RangeError(`chaoskit: ${op}: ${field} must be a whole number of milliseconds from 0 to ${max}, got ${String(v)}`);
  }
  return /** @type {number} */ (v);
}

/**
 * Checks a uint64 (a fencing or lease token); 0 and undefined are left out of the request.
 * @param {string} op
 * @param {string} field
 * @param {unknown} v
 * @returns {bigint | undefined}
 */
function uint64(op, field, v) {
  if (v === undefined || v === 0 || v === 0n) return undefined;
  if ((typeof v === 'number' && Number.isSafeInteger(v)) || typeof v === 'bigint') {
    const b = BigInt(v);
    if (b > 0n && b <= MAX_UINT64) return b;
  }
  throw new RangeError(`chaoskit: ${op}: ${field} must be a uint64 (a BigInt, or a safe integer), got ${String(v)}`);
}

/**
 * Converts a Lease to its protocol form.
 * @param {string} op
 * @param {Lease} l
 */
function leaseJSON(op, l) {
  if (!l || typeof l.name !== 'string' || l.name === '') {
    throw new TypeError(`chaoskit: ${op}: want the lease acquire returned, got ${String(l)}`);
  }
  return {
    name: l.name, holder: l.holder || undefined, token: uint64(op, 'lease.token', l.token) ?? 0n,
    expires_ms: l.expiresMs || undefined,
  };
}

/**
 * Converts a lease of the protocol to a Lease.
 * @param {Record<string, any> | undefined} l
 * @returns {Lease}
 */
function leaseOf(l) {
  return { name: l?.name ?? '', holder: l?.holder ?? '', token: BigInt(l?.token ?? 0), expiresMs: l?.expires_ms ?? 0 };
}

/**
 * Encodes v as JSON as JSON.stringify does, except that a BigInt is written as the integer it
 * is (JSON.stringify refuses BigInts).
 * @param {unknown} v
 * @param {Set<object>} [seen] the objects being encoded, to refuse a cycle
 * @returns {string | undefined} undefined for what JSON leaves out (undefined, functions, symbols)
 */
function encode(v, seen = new Set()) {
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (typeof (/** @type {any} */ (v).toJSON) === 'function') return encode(/** @type {any} */ (v).toJSON(), seen);
  if (v instanceof Number || v instanceof String || v instanceof Boolean) return JSON.stringify(v);
  if (seen.has(v)) throw new TypeError('chaoskit: cannot encode a cyclic structure as JSON');
  seen.add(v);
  let out;
  if (Array.isArray(v)) {
    out = `[${v.map((x) => encode(x, seen) ?? 'null').join(',')}]`;
  } else {
    const parts = [];
    for (const [k, x] of Object.entries(v)) {
      const s = encode(x, seen);
      if (s !== undefined) parts.push(`${JSON.stringify(k)}:${s}`);
    }
    out = `{${parts.join(',')}}`;
  }
  seen.delete(v);
  return out;
}

/** The response fields that hold a uint64: random's value, a lease's token. */
const EXACT_KEYS = new Set(['"value"', '"token"']);

/**
 * Parses a response line. The numbers of EXACT_KEYS are quoted before JSON.parse sees them, so
 * that a uint64 past 2^53 keeps every digit; the methods read them with BigInt().
 * @param {string} text
 * @returns {Record<string, any>}
 */
function parseResponse(text) {
  let out = '';
  let from = 0;
  let lastString = ''; // the raw text of the last string literal, with its quotes
  let key = ''; // the key whose value comes next, just after its colon; '' elsewhere
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      lastString = text.slice(start, i + 1);
      key = '';
    } else if (c === ':') {
      key = lastString;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let end = i + 1;
      while (end < text.length && '0123456789.eE+-'.includes(text[end])) end++;
      if (EXACT_KEYS.has(key)) {
        if (!/^[0-9]+$/.test(text.slice(i, end))) throw new SyntaxError(`${key} is not a uint64`);
        out += `${text.slice(from, i)}"${text.slice(i, end)}"`;
        from = end;
      }
      i = end - 1;
      key = '';
    } else if (c !== ' ' && c !== '\t' && c !== '\r' && c !== '\n') {
      key = '';
    }
  }
  const r = JSON.parse(out + text.slice(from));
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new SyntaxError('a response must be a JSON object');
  return r;
}
