"""A harness that keeps its progress in one JSON checkpoint on its state directory, rewritten
after each of its five steps, and does on a full disk what its mode says.

    python3 checkpoint.py MODE          run under chaoskit (MODE below)
    python3 checkpoint.py --dump-state  print the checkpoint as JSON

Modes:
    exit     write a temporary file, fsync it, rename it over the checkpoint, fsync the
             directory; on any OSError, exit with status 1 and leave the rest to the
             supervisor (what most software does: correct)
    swallow  the same, but carry on when a write fails, as if it had landed
    spin     the same, but write again at once when a write fails, for ever
    exit0    the same, but exit with status 0 when a write fails, as if done
    inplace  truncate and rewrite the checkpoint itself; exit 1 on an error
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import chaoskit  # noqa: E402

STEPS = 5
NAME = "checkpoint.json"


def load(state):
    try:
        with open(os.path.join(state, NAME)) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"done": 0}


def write(path, body):
    with open(path, "w") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())


def save(state, cp, mode):
    body = json.dumps(cp) + "\n"
    if mode == "inplace":
        write(os.path.join(state, NAME), body)
        return
    tmp = os.path.join(state, NAME + ".tmp")
    write(tmp, body)
    os.rename(tmp, os.path.join(state, NAME))
    fd = os.open(state, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main(mode):
    ck = chaoskit.connect()
    cp = load(ck.state_dir)  # a checkpoint that is not JSON fails the process: it cannot go on
    while cp["done"] < STEPS:
        nxt = {"done": cp["done"] + 1, "steps": cp.get("steps", []) + ["step %d" % cp["done"]]}
        while True:
            try:
                save(ck.state_dir, nxt, mode)
                break
            except OSError:
                if mode == "spin":
                    continue
                if mode == "exit0":
                    ck.done("done")
                    sys.exit(0)
                if mode != "swallow":
                    raise
                break
        cp = nxt
        ck.mark("step %d saved" % (cp["done"] - 1))
    ck.done("done")


if __name__ == "__main__":
    if sys.argv[1:] == ["--dump-state"]:
        print(json.dumps(load(os.environ.get("CHAOSKIT_STATE_DIR", "."))))
    else:
        main(sys.argv[1])
