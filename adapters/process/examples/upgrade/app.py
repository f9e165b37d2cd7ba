"""A deploy in the middle of a run: an agent whose version 2 renames a field of its checkpoint.

Version 1 runs three steps, each filing a shipment with the tool ship under a key stable per
step, then saving its checkpoint, {"step": N}, atomically and durably in CHAOSKIT_STATE_DIR
(write checkpoint.json.tmp, fsync it, rename it over checkpoint.json, fsync the directory) and
marking the step. A restart resumes after the last saved step.

Version 2 (--version 2) renames the field to "cursor", as a refactor does. It migrates a
checkpoint of version 1 (it reads "step" when there is no "cursor"), so a run that version 1
began and version 2 took over ends as a run of version 2 would. With --no-migration it reads
"cursor" only: a checkpoint of version 1 makes it fail (KeyError) each time it starts, and the
run is stranded.

    chaoskit run --exec 'python3 app.py' --upgrade-exec 'python3 app.py --version 2' \\
        --tool ship=idempotent-by-key --state 'python3 app.py --dump-state' --faults kill,upgrade
    chaoskit run --exec 'python3 app.py' --upgrade-exec 'python3 app.py --version 2 --no-migration' ...
        # caught: stranded
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import chaoskit  # noqa: E402  (one file: copy it next to your harness instead, if you like)

STEPS = ("pack", "label", "dispatch")
"""The steps, each filing one shipment."""

CHECKPOINT = "checkpoint.json"


def field(version):
    """The checkpoint's field that holds the steps done: renamed by version 2."""
    return "step" if version == 1 else "cursor"


def load(state_dir, version, migrate):
    """Returns how many steps the checkpoint says are done (0 without one)."""
    path = os.path.join(state_dir, CHECKPOINT)
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        checkpoint = json.load(f)
    if version == 2 and migrate and "cursor" not in checkpoint:
        return checkpoint["step"]  # a checkpoint of version 1
    return checkpoint[field(version)]


def save(state_dir, version, done):
    """Saves the checkpoint atomically and durably."""
    tmp = os.path.join(state_dir, CHECKPOINT + ".tmp")
    with open(tmp, "w") as f:
        json.dump({field(version): done}, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(state_dir, CHECKPOINT))
    d = os.open(state_dir, os.O_RDONLY)  # the rename, durable
    os.fsync(d)
    os.close(d)


def ship(ck, step):
    """Files the step's shipment under a key stable per step, retrying while its outcome is
    unknown."""
    for attempt in range(5):
        try:
            return ck.call("ship", {"step": step}, key="ship-" + step)
        except chaoskit.RETRY_WITH_SAME_KEY:
            ck.sleep(2 ** attempt)
    raise SystemExit("app: ship failed 5 times for %r" % step)


def run(ck, version, migrate):
    """Runs the steps from where the checkpoint says, to the end."""
    done = load(ck.state_dir, version, migrate)
    for i in range(done, len(STEPS)):
        ship(ck, STEPS[i])
        save(ck.state_dir, version, i + 1)
        ck.mark("step %d %s" % (i, STEPS[i]))
    return len(STEPS)


def dump_state(state_dir):
    """Prints the steps done, whichever version wrote the checkpoint."""
    path = os.path.join(state_dir, CHECKPOINT)
    done = 0
    if os.path.exists(path):
        with open(path) as f:
            checkpoint = json.load(f)
        done = checkpoint.get("cursor", checkpoint.get("step", 0))
    print(json.dumps({"done": done}))


def main():
    """Parses the flags; runs the agent under chaoskit, or dumps its state."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--version", type=int, default=1, choices=(1, 2), help="the version to run")
    p.add_argument("--no-migration", action="store_true", help="version 2 without reading version 1's field")
    p.add_argument("--dump-state", action="store_true", help="print the durable state as JSON and exit")
    flags = p.parse_args()
    if flags.dump_state:
        return dump_state(os.environ.get("CHAOSKIT_STATE_DIR", "."))
    with chaoskit.connect() as ck:  # NotUnderChaoskit unless chaoskit run started it
        ck.done({"steps": run(ck, flags.version, not flags.no_migration)})


if __name__ == "__main__":
    main()
