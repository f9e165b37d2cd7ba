// Type declarations of chaoskit.mjs, the JavaScript client of chaoskit's process protocol
// (../PROTOCOL.md). Most requests are beats, at which chaoskit may SIGKILL the process; requests
// made together are in flight together, answered by id. Durations are whole milliseconds of virtual
// time: ms, latencyMs and ttlMs from 0 to 31536000000 (a year; a RangeError otherwise), timeoutMs
// any safe integer (chaoskit counts one past a year as a year).

/** The protocol version the client speaks. */
export declare const VERSION: 1;

/** The longest line, in bytes, either side may send. */
export declare const MAX_LINE: number;

/** Thrown by connect() when the process was not started by chaoskit (CHAOSKIT_SOCKET is unset). */
export declare class NotUnderChaoskit extends Error {
  constructor();
}

/**
 * A failure of the connection itself, not an answer of chaoskit's: the socket could not be
 * reached or closed, or a response was malformed or answered another request. The client is
 * unusable after it.
 */
export declare class ConnectionError extends Error {
  constructor(message: string, options?: { cause?: unknown });
}

/** The protocol's error codes. */
export type ErrorCode =
  | 'transient' | 'ambiguous' | 'timeout' | 'fenced' | 'key_reused' | 'lease_held' | 'lease_lost'
  | 'rate_limited' | 'model_server' | 'context_length' | 'deadline' | 'bad_request' | 'version';

/**
 * An error chaoskit answered a request with. Each code has its subclass (errorsByCode); a code
 * this client does not know yet is a plain ChaoskitError.
 */
export declare class ChaoskitError extends Error {
  constructor(code: string, message: string, retryAfterMs?: number);
  /** The protocol's error code. */
  code: ErrorCode | (string & {});
  /** How long to wait before retrying, in milliseconds of virtual time (rate_limited; else 0). */
  retryAfterMs: number;
}

/** transient: the tool failed before applying the call. Retry, with the same key. */
export declare class TransientError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'transient';
  code: 'transient';
}
/** ambiguous: the call was applied and its reply lost. Retry with the same key, or look the effect up. */
export declare class AmbiguousError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'ambiguous';
  code: 'ambiguous';
}
/** timeout: the call's deadline passed; it may still be applied. As ambiguous. */
export declare class TimeoutError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'timeout';
  code: 'timeout';
}
/** fenced: the tool has seen a newer fencing token. Stop: another worker has the run. */
export declare class FencedError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'fenced';
  code: 'fenced';
}
/** key_reused: the call's key was first used with other arguments; nothing was applied. A bug: give a call with other arguments a key of its own. */
export declare class KeyReusedError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'key_reused';
  code: 'key_reused';
}
/** lease_held: another worker holds the lease. Wait and try again. */
export declare class LeaseHeldError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'lease_held';
  code: 'lease_held';
}
/** lease_lost: the lease expired or was taken over. Stop acting for it. */
export declare class LeaseLostError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'lease_lost';
  code: 'lease_lost';
}
/** rate_limited: the model is rate limited. Retry after `retryAfterMs`. */
export declare class RateLimitedError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'rate_limited';
  code: 'rate_limited';
}
/** model_server: the model failed (500). Retry, with backoff. */
export declare class ModelServerError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'model_server';
  code: 'model_server';
}
/** context_length: the model refused a context too long. Shorten the prompt. */
export declare class ContextLengthError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'context_length';
  code: 'context_length';
}
/** deadline: a wait's timeoutMs passed (await, model). */
export declare class DeadlineError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'deadline';
  code: 'deadline';
}
/** bad_request: chaoskit refused the request; the process is failed with this message. */
export declare class BadRequestError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'bad_request';
  code: 'bad_request';
}
/** version: chaoskit does not speak the client's protocol version; the process is failed. */
export declare class VersionError extends ChaoskitError {
  constructor(message: string, retryAfterMs?: number);
  static readonly code: 'version';
  code: 'version';
}

/** The subclasses of ChaoskitError by protocol error code. */
export declare const errorsByCode: Readonly<{
  transient: typeof TransientError;
  ambiguous: typeof AmbiguousError;
  timeout: typeof TimeoutError;
  fenced: typeof FencedError;
  key_reused: typeof KeyReusedError;
  lease_held: typeof LeaseHeldError;
  lease_lost: typeof LeaseLostError;
  rate_limited: typeof RateLimitedError;
  model_server: typeof ModelServerError;
  context_length: typeof ContextLengthError;
  deadline: typeof DeadlineError;
  bad_request: typeof BadRequestError;
  version: typeof VersionError;
}>;

/** One call of a tool. */
export interface Call {
  /** The tool's name, as declared to chaoskit. */
  tool: string;
  /** What the call does (any JSON; BigInts are written as integers): it identifies the effect. */
  args?: unknown;
  /** The idempotency key: a tool that honours keys applies a key once. */
  key?: string;
  /**
   * The harness's own reference for the effect, which the tool keeps with it for ever (unlike a
   * key, which it may forget): lookup() finds the effect by it.
   */
  ref?: string;
  /** The caller's fencing token, from its Lease, for fenced tools. */
  fence?: bigint | number;
  /** The call's deadline, in milliseconds of virtual time. */
  timeoutMs?: number;
}

/** A tool's answer. */
export interface Reply {
  /** What the call created. */
  id: string;
  /** The tool recognised the key and returned its earlier reply. */
  replayed: boolean;
  /** An asynchronous tool's completion will be posted there ('' if none). */
  topic: string;
}

/** One call of the scripted model. */
export interface ModelCall {
  /** Names the logical call, e.g. "plan step 3". */
  purpose: string;
  /** The scripted answer. */
  reply?: string;
  /** How long the answer takes, in virtual milliseconds. */
  latencyMs?: number;
  /** The call's deadline, in virtual milliseconds. */
  timeoutMs?: number;
}

/** A message posted on a topic. */
export interface Message {
  topic: string;
  body: string;
  /** Its number on the topic, from 0 (the first message posted on it). */
  seq: number;
}

/** A time-limited claim on a named resource; pass its token to fenced tools as Call.fence. */
export interface Lease {
  name: string;
  holder: string;
  /** The fencing token: it grows with every acquisition. */
  token: bigint;
  /** When it expires, in Unix milliseconds of virtual time. */
  expiresMs: number;
}

/**
 * Connects to the chaoskit that started the process, as the environment names it, and says
 * hello. Rejects with NotUnderChaoskit when CHAOSKIT_SOCKET is unset, ConnectionError when the
 * socket cannot be reached, VersionError or BadRequestError when chaoskit refuses the hello.
 */
export declare function connect(options?: { env?: Record<string, string | undefined> }): Promise<Client>;

/** A connection to chaoskit, from connect(). */
export declare class Client {
  private constructor();
  /** The process's number: 0 for the first, one more per process started. */
  process: number;
  /** The process's number under its earlier name. @deprecated use process. */
  attempt: number;
  /** The worker the process belongs to, from 0. */
  worker: number;
  /** The directory to keep durable state in. */
  stateDir: string;

  /**
   * Calls a tool. Two beats: the call leaving the process, and the call applied. Rejects with
   * TransientError (not applied: retry with the same key), AmbiguousError (the reply was lost:
   * it may have been applied), TimeoutError (the deadline passed: it may still be applied),
   * FencedError, KeyReusedError (the key was first used with other arguments).
   */
  call(call: Call): Promise<Reply>;
  /**
   * Asks the tool for the effect applied with the reference ref (Call.ref): its reply (its id),
   * or null if there is none. Read-only, it outlives the tool's memory of keys; two beats, like
   * a call.
   */
  lookup(tool: string, ref: string, options?: { timeoutMs?: number }): Promise<Reply | null>;
  /**
   * Calls the scripted model; a beat. Rejects with RateLimitedError (retry after its
   * retryAfterMs), ModelServerError, ContextLengthError, DeadlineError.
   */
  model(call: ModelCall): Promise<string>;
  /** Returns the virtual time. Not a beat. */
  now(): Promise<Date>;
  /** Waits ms milliseconds of virtual time; a beat. */
  sleep(ms: number): Promise<void>;
  /**
   * Waits until a message is posted on topic and returns all of the topic's messages; a beat.
   * timeoutMs is a virtual deadline (DeadlineError).
   */
  await(topic: string, options?: { timeoutMs?: number }): Promise<Message[]>;
  /** Returns the messages posted on topic so far. Not a beat. */
  messages(topic: string): Promise<Message[]>;
  /** Takes the named lease for ttlMs, unless another worker holds it (LeaseHeldError); a beat. */
  acquire(name: string, ttlMs: number): Promise<Lease>;
  /** Extends a lease by ttlMs from now, unless it was lost (LeaseLostError); a beat. */
  renew(lease: Lease, ttlMs: number): Promise<Lease>;
  /** Gives a lease up; a beat. */
  release(lease: Lease): Promise<void>;
  /** Declares progress, right after a step became durable, with a label unique to the step; a beat. */
  mark(label: string): Promise<void>;
  /** Returns a uint64 from the process's seeded random source. Not a beat. */
  random(): Promise<bigint>;
  /** Sends the run's result (any JSON; BigInts as integers), compared with the golden run's. Exit 0 after it. */
  done(result?: unknown): Promise<void>;
  /**
   * Records that the harness refuses to go on, not knowing what is safe (an effect it cannot
   * tell was applied, and nothing to look it up by), with the reason a person should read. Exit
   * after it: the run ends there, and passes as refused. Not a beat.
   */
  refuse(reason: string): Promise<void>;
  /** Closes the connection; requests made after it fail with ConnectionError. */
  close(): void;
}
