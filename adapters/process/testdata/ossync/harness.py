"""A harness that makes its checkpoint durable with os.sync() and nothing else.

It files three purchase orders, one a step, and after each writes its checkpoint to a temporary
file, calls os.sync() (the new checkpoint is durable), renames it over cp.json and calls
os.sync() again (the rename is durable), which on Linux writes back every file and directory.
It fsyncs nothing by itself: a correct harness all the same, which chaoskit must not fail under
power cuts. --no-sync leaves the os.sync() calls out (the bug).

    harness.py               run under chaoskit
    harness.py --dump-state  print the checkpoint (chaoskit's --state command)
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import chaoskit  # noqa: E402


def load(state_dir):
    try:
        with open(os.path.join(state_dir, "cp.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"next": 0, "orders": []}


def sync():
    if "--no-sync" not in sys.argv:
        os.sync()


def main():
    if "--dump-state" in sys.argv:
        print(json.dumps(load(os.environ["CHAOSKIT_STATE_DIR"])))
        return
    ck = chaoskit.connect()
    cp = load(ck.state_dir)
    for i in range(cp["next"], 3):
        reply = ck.call("create_po", {"order": i}, key="po-%d" % i)
        cp = {"next": i + 1, "orders": cp["orders"] + [reply.id]}
        tmp = os.path.join(ck.state_dir, "cp.json.tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps(cp))
        sync()
        os.rename(tmp, os.path.join(ck.state_dir, "cp.json"))
        sync()
        ck.mark("order %d" % i)
    ck.done(cp)


if __name__ == "__main__":
    main()
