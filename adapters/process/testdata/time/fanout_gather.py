"""A harness that makes five independent, keyed calls at once with asyncio.gather at each step,
and checkpoints the step once all five are back. Run under chaoskit (PROTOCOL.md)."""

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import chaoskit  # noqa: E402
from fanout_threads import load, save  # noqa: E402

STEPS = 2


async def main():
    if "--dump-state" in sys.argv:
        print(json.dumps(load(os.path.join(os.environ["CHAOSKIT_STATE_DIR"], "state.json"))))
        return
    ck = await chaoskit.connect_async()
    path = os.path.join(ck.state_dir, "state.json")
    state = load(path)
    for step in range(len(state["steps"]), STEPS):
        replies = await asyncio.gather(*[ck.call("create_po", {"step": step, "line": n}, key="s%d-%d" % (step, n))
                                         for n in range(5)])
        state["steps"].append(sorted(r.id for r in replies))
        save(path, state)
        await ck.mark("step %d" % step)
    await ck.done({"steps": len(state["steps"])})


if __name__ == "__main__":
    asyncio.run(main())
