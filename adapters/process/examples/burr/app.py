"""A Burr-style agent under chaoskit: a five-step state machine with a SQLite persister.

Like Apache Burr's application with a state persister and resume_at_next_action, it runs the
actions gather, plan, build, verify and ship in turn, writes one row per completed step to a
SQLite database (rollback journal, synchronous=EXTRA) in CHAOSKIT_STATE_DIR, and on restart
resumes at the action after the last row. Every action files a purchase order with the tool
create_po, a side effect chaoskit counts; plan first asks the (scripted) model for the plan.

Checkpointing after a step gives exactly-once for the steps before a crash and at-least-once
for the step in flight, so the step in flight must be guarded. This one is: before acting it
records the step's intent and an idempotency key stable per run and step (the app id, the
sequence id and the action), retries with that key when the call's outcome is unknown, and
commits the step's row after; the model's plan is kept with the intent, so a restart does not
ask again. Any error, a full disk's included (SQLite's "database or disk is full"), ends the
process with a traceback, as a Burr application's would, and its supervisor restarts it; the
next open rolls an unfinished transaction back from its journal. With --broken it
acts first, without a key, and only saves after, as the naive loop of the Burr write-up does: a
kill between the two files a purchase order twice.

    chaoskit run --exec 'python3 app.py' --tool create_po=idempotent-by-key,latency=1s \\
        --state 'python3 app.py --dump-state' --faults kill,tool-transient,tool-ambiguous,tool-timeout
    chaoskit run --exec 'python3 app.py --broken' ...    # caught: no-duplicate-effects
"""

import argparse
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import chaoskit  # noqa: E402  (one file: copy it next to your harness instead, if you like)

ACTIONS = ("gather", "plan", "build", "verify", "ship")
"""The state machine: each action's transition is to the next one."""

USD = {"gather": 1200, "plan": 300, "build": 84000, "verify": 2500, "ship": 900}
"""What each action's purchase order is for."""

TRIES = 5
"""How many times a call whose outcome is unknown is made before the step gives up."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS steps (      -- the persister: one row per completed step
    app_id TEXT NOT NULL, sequence_id INTEGER NOT NULL, action TEXT NOT NULL,
    state TEXT NOT NULL,                -- the application's state after the step, as JSON
    PRIMARY KEY (app_id, sequence_id));
CREATE TABLE IF NOT EXISTS intents (    -- written before a step acts
    app_id TEXT NOT NULL, sequence_id INTEGER NOT NULL, action TEXT NOT NULL,
    idem_key TEXT NOT NULL, inputs TEXT NOT NULL,
    PRIMARY KEY (app_id, sequence_id));
"""


def canonical(value):
    """JSON with sorted keys and no spaces: the same value always prints the same."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def open_db(state_dir, synchronous="EXTRA"):
    """Opens (creating) the database, in autocommit mode: transactions are explicit.

    In rollback-journal (DELETE) mode a commit ends by unlinking the journal, and synchronous=FULL
    does not fsync the directory after it: a power cut can bring the journal back, and the next
    open rolls the committed step back (chaoskit --disk fuse finds it: a step marked durable is
    done again). EXTRA fsyncs the directory too, which is what SQLite documents it for
    (https://sqlite.org/pragma.html#pragma_synchronous); OFF fsyncs nothing."""
    db = sqlite3.connect(os.path.join(state_dir, "burr.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("PRAGMA synchronous=" + synchronous)
    db.executescript(SCHEMA)
    return db


def write(db, sql, args):
    """Runs one statement in its own transaction, committed (durable) when it returns."""
    db.execute("BEGIN IMMEDIATE")
    db.execute(sql, args)
    db.execute("COMMIT")


def resume(db, app_id):
    """Returns the state after the last completed step and the sequence id of the next one."""
    row = db.execute("SELECT sequence_id, state FROM steps WHERE app_id=? "
                     "ORDER BY sequence_id DESC LIMIT 1", (app_id,)).fetchone()
    if row is None:
        return {"app_id": app_id, "pos": []}, 0
    return json.loads(row[1]), row[0] + 1


def ask_model(ck, purpose, reply):
    """Asks the scripted model, waiting out rate limits and retrying server errors and hangs."""
    for attempt in range(TRIES):
        try:
            return ck.model(purpose, reply, latency=2, timeout=60)
        except chaoskit.RateLimited as e:
            ck.sleep(e.retry_after)
        except (chaoskit.ModelServer, chaoskit.Deadline):
            ck.sleep(2 ** attempt)
    raise SystemExit("app: the model failed %d times on %r" % (TRIES, purpose))


def call(ck, args, key):
    """Files a purchase order, retrying while its outcome is unknown. With a key a retry
    cannot file it twice; without one (the broken variant) an ambiguous retry can."""
    for attempt in range(TRIES):
        try:
            return ck.call("create_po", args, key=key)
        except chaoskit.RETRY_WITH_SAME_KEY:
            ck.sleep(2 ** attempt)
    raise SystemExit("app: create_po failed %d times for %r" % (TRIES, args))


def decide(ck, action):
    """What a step decides before it acts: the plan asks the model."""
    if action == "plan":
        return {"plan": ask_model(ck, "plan the loop", "build it, verify it, ship it")}
    return {}


def order(app_id, action, inputs):
    """The purchase order an action files: for the run and the step, with what it decided."""
    return dict(inputs, app=app_id, step=action, usd=USD[action])


def act(ck, db, app_id, seq, action):
    """Does a step, guarded: the intent and key are durable before the call, and a step a
    crash interrupted is done again as recorded, under the same key. Returns what the step
    decided and the tool's reply."""
    row = db.execute("SELECT idem_key, inputs FROM intents WHERE app_id=? AND sequence_id=?",
                     (app_id, seq)).fetchone()
    if row is None:
        key, inputs = "%s:%d:%s" % (app_id, seq, action), decide(ck, action)
        write(db, "INSERT INTO intents VALUES (?,?,?,?,?)", (app_id, seq, action, key, canonical(inputs)))
    else:
        key, inputs = row[0], json.loads(row[1])
    return inputs, call(ck, order(app_id, action, inputs), key=key)


def act_unguarded(ck, app_id, action):
    """Does a step as the naive loop does (--broken): it acts at once, without a key."""
    inputs = decide(ck, action)
    return inputs, call(ck, order(app_id, action, inputs), key=None)


def run(ck, app_id, broken, synchronous="EXTRA"):
    """Runs the state machine from where the database says it stopped, to the end: each step
    acts, then its row is committed, then it is marked as progress."""
    db = open_db(ck.state_dir, synchronous)
    state, seq = resume(db, app_id)
    while seq < len(ACTIONS):
        action = ACTIONS[seq]
        inputs, reply = act_unguarded(ck, app_id, action) if broken else act(ck, db, app_id, seq, action)
        state = dict(state, pos=state["pos"] + [reply.id], **inputs)
        write(db, "INSERT INTO steps VALUES (?,?,?,?)", (app_id, seq, action, canonical(state)))
        ck.mark("step %d %s" % (seq, action))
        seq += 1
    db.close()
    return state


def dump_state(state_dir):
    """Prints the durable state: the completed steps with their states, and the intents."""
    path = os.path.join(state_dir, "burr.db")
    out = {"steps": [], "intents": []}
    if os.path.exists(path):
        db = sqlite3.connect(path)  # read-write, so that a hot journal is rolled back
        steps = db.execute("SELECT * FROM steps ORDER BY app_id, sequence_id")
        out["steps"] = [{"app_id": a, "seq": s, "action": act, "state": json.loads(st)}
                        for a, s, act, st in steps]
        intents = db.execute("SELECT * FROM intents ORDER BY app_id, sequence_id")
        out["intents"] = [{"app_id": a, "seq": s, "action": act, "key": k, "inputs": json.loads(i)}
                          for a, s, act, k, i in intents]
        db.close()
    print(canonical(out))


def main():
    """Parses the flags; runs the agent under chaoskit, or dumps its state."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--broken", action="store_true", help="act before saving, without an idempotency key")
    p.add_argument("--app-id", default="loop-1", help="the application's id: the run the rows belong to")
    p.add_argument("--dump-state", action="store_true", help="print the durable state as JSON and exit")
    p.add_argument("--synchronous", default="EXTRA", choices=("EXTRA", "FULL", "NORMAL", "OFF"),
                   help="SQLite's synchronous setting (EXTRA, the default, also fsyncs the directory after a commit; the README's findings say what the others lose to a power cut)")
    flags = p.parse_args()
    if flags.dump_state:
        dump_state(os.environ.get("CHAOSKIT_STATE_DIR", "."))
        return
    try:
        ck = chaoskit.connect()
    except chaoskit.NotUnderChaoskit as e:
        sys.exit("%s\nrun it with chaoskit run --exec 'python3 app.py' (see PROTOCOL.md)" % e)
    with ck:
        state = run(ck, flags.app_id, flags.broken, flags.synchronous)
        ck.done({"app_id": flags.app_id, "steps": len(state["pos"]), "pos": state["pos"]})


if __name__ == "__main__":
    main()
