"""A harness that writes a checkpoint per step and, when the disk is full, waits a second and
tries again, as a service would, until the write goes through. Run under chaoskit with a FUSE
disk (PROTOCOL.md)."""

import errno
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import chaoskit  # noqa: E402
from fanout_threads import load  # noqa: E402

STEPS = 3


def save(path, state):
    while True:
        try:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps(state))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            d = os.open(os.path.dirname(path), os.O_RDONLY)
            os.fsync(d)
            os.close(d)
            return
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            time.sleep(1)


def main():
    if "--dump-state" in sys.argv:
        print(json.dumps(load(os.path.join(os.environ["CHAOSKIT_STATE_DIR"], "state.json"))))
        return
    ck = chaoskit.connect()
    path = os.path.join(ck.state_dir, "state.json")
    state = load(path)
    for step in range(len(state["steps"]), STEPS):
        reply = ck.call("create_po", {"step": step}, key="s%d" % step)
        state["steps"].append(reply.id)
        save(path, state)
        ck.mark("step %d" % step)
    ck.done({"steps": state["steps"]})


if __name__ == "__main__":
    main()
