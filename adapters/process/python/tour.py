"""A tour of the protocol: makes every request once and sends what came back as its result.

python_test.go runs it under chaoskit (with the tools create_po and an asynchronous check) and
compares its result with what the Go test child's tour gets from the same requests.
"""

import sys

import chaoskit


def tour(ck):
    """Makes every request once; returns what each answered."""
    out = {"process": ck.process, "attempt": ck.attempt, "worker": ck.worker}
    t0 = ck.now()
    ck.sleep(90)
    out["slept"] = int((ck.now() - t0).total_seconds())
    po = ck.call("create_po", {"b": 2, "a": 1}, key="k1", ref="order-1")
    found, missing = ck.lookup("create_po", "order-1"), ck.lookup("create_po", "order-2")
    out["lookup"] = [found.id, missing]
    again = ck.call("create_po", {"a": 1, "b": 2}, key="k1")
    out["po"], out["replayed"] = po.id, again.replayed
    out["model"] = ck.model("plan", "file the order", latency=2, timeout=60)
    lease = ck.acquire("run-1", ttl=30)
    ck.sleep(10)
    renewed = ck.renew(lease, ttl=30)
    ck.release(renewed)
    out["token"] = renewed.token
    out["lease_extended"] = int((renewed.expires - lease.expires).total_seconds())
    check = ck.call("check", "vendor", key="c1")
    out["message"] = ck.await_(check.topic, timeout=3600)[0].body
    try:
        ck.await_("nobody/writes/here", timeout=5)
        out["await_deadline"] = False
    except chaoskit.Deadline:
        out["await_deadline"] = True
    out["messages"] = len(ck.messages(check.topic))
    out["random"] = ck.random() != 0
    ck.mark("toured")
    return out


def main():
    """Connects, tours, and sends the tour's answers as the run's result."""
    try:
        ck = chaoskit.connect()
    except chaoskit.NotUnderChaoskit as e:
        sys.exit(str(e))
    with ck:
        ck.done(tour(ck))


if __name__ == "__main__":
    main()
