// Type declarations of nodetest.mjs: chaoskit campaigns as node:test suites, a test per fault
// schedule.

/** A chaoskit campaign over a command, as `chaoskit run --exec` takes it. */
export interface CheckOptions {
  /** The command that runs the harness: its words, or one command line. */
  exec: string[] | string;
  /** The target's name in reports (default: the command line). */
  name?: string;
  /**
   * The tools the command calls: `{ create_po: 'idempotent-by-key,latency=1s' }`, or a list of
   * --tool values (`'create_po=idempotent-by-key'`).
   */
  tools?: Record<string, string> | string[];
  /**
   * The REST service doubles the command calls under $CHAOSKIT_HTTP_URL:
   * `{ 'POST /v1/charges': 'idempotent-by-header:Idempotency-Key' }`, or a list of --http values.
   */
  http?: Record<string, string> | string[];
  /**
   * The cassette of the model's answers (adapters/provider/CASSETTE.md), relative to the test
   * file's directory: the command gets an OpenAI- and Anthropic-compatible API at
   * $OPENAI_BASE_URL and $ANTHROPIC_BASE_URL.
   */
  cassette?: string;
  /** The command that prints the harness's durable state as JSON, run on a copy of the state directory. */
  state?: string[] | string;
  /** The command of the next version, which an upgrade fault deploys mid-run (--upgrade-exec). */
  upgrade?: string[] | string;
  /** The next version's state command (--upgrade-state; default: state). */
  upgradeState?: string[] | string;
  /** How long the deploy lets the old version run after SIGTERM before it kills it, in virtual time: '30s' (the default), '0' to kill at once (--grace). */
  grace?: string;
  /** The fault kinds or families: `['kill', 'tool']` or `'kill,tool'` (default: storage, or kill on a plain disk). */
  faults?: string[] | string;
  /** JSON paths left out when results and states are compared. */
  ignore?: string[];
  /** How the state directory reaches chaoskit's fault disk (default plain). */
  disk?: 'plain' | 'fuse';
  /** With disk fuse, which of the command's doings are beats (default all). */
  beats?: 'all' | 'calls';
  /** Variables added to the command's environment: an object, or KEY=VALUE strings. */
  env?: Record<string, string> | string[];
  /** The command's working directory, relative to the test file's (the default). */
  dir?: string;
  /** exhaustive (the default) or random. */
  mode?: 'exhaustive' | 'random';
  /** Random mode: schedules to draw (default 100); exhaustive: at most this many, evenly. */
  cases?: number;
  /** The campaign's seed (default 1). */
  seed?: number;
  /** Restart a process that fails on its own: 'always' (the default), 'never', or at most N times. */
  restart?: string;
  /** Cases run at once (default: one per CPU); the report does not depend on it. */
  parallel?: number;
  /** @deprecated The old name of `parallel`. */
  workers?: number;
  /**
   * Where to write the campaign's report directory, in a subdirectory named for the suite
   * (default: $CHAOSKIT_OUT; none without it).
   */
  out?: string;
  /** The chaoskit command (default: $CHAOSKIT_BIN, else chaoskit on PATH). */
  chaoskit?: string;
}

/**
 * Defines a node:test suite named `name` with a test per case of the campaign `options`
 * describe, named for its schedule (`kill@3`: `node --test --test-name-pattern '^kill@3$'` runs
 * it); a case that does not pass fails its test with the properties it broke, the beats around
 * the fault and the commands that replay it. Returns the suite's promise, as describe() does.
 */
export declare function check(name: string, options: CheckOptions): Promise<void>;
