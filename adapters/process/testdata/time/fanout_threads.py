"""A harness that fans three independent, keyed purchase orders out over a thread pool at
each step, and checkpoints the step once all three are back: what an agent SDK does with a
model answer that asks for several tool calls at once. Run under chaoskit (PROTOCOL.md)."""

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import chaoskit  # noqa: E402

STEPS = 3


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"steps": []}


def save(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    d = os.open(os.path.dirname(path), os.O_RDONLY)
    os.fsync(d)
    os.close(d)


def main():
    if "--dump-state" in sys.argv:
        print(json.dumps(load(os.path.join(os.environ["CHAOSKIT_STATE_DIR"], "state.json"))))
        return
    ck = chaoskit.connect()
    path = os.path.join(ck.state_dir, "state.json")
    state = load(path)
    for step in range(len(state["steps"]), STEPS):
        with ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(ck.call, "create_po", {"step": step, "line": line}, key="s%d-%s" % (step, line))
                       for line in "abc"]
            ids = sorted(f.result().id for f in futures)
        state["steps"].append(ids)
        save(path, state)
        ck.mark("step %d" % step)
    ck.done({"steps": len(state["steps"])})


if __name__ == "__main__":
    main()
