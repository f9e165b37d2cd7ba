#!/usr/bin/env python3
"""app.py: a fulfilment job that ships an order's three parcels through a carrier's REST API,
in plain Python (standard library only), as a team writes one; nothing in it knows chaoskit.

    python3 app.py                                 version 1
    python3 app.py --version 2                     version 2, deployed over a run of version 1
    python3 app.py --version 2 --no-migration      buggy: cannot read version 1's checkpoint
    python3 app.py --version 2 --grams             version 2 that also sends weights in grams
    python3 app.py --version 2 --grams --no-in-flight
                                                   buggy: resends version 1's shipment in flight
                                                   in grams, under the same key
    python3 app.py --dump-state                    print the durable state as JSON (connects nowhere)

Environment: SHIPPING_API_URL (the carrier's API), STATE_DIR (default ./state).

Version 1 records the run ({"step": 0}) before its first shipment, then for each parcel POSTs
/v1/shipments with an Idempotency-Key stable per parcel (ORD-1042-books) and saves its
checkpoint {"step": N} atomically and durably (write checkpoint.json.tmp, fsync it, rename it
over checkpoint.json, fsync the directory). A restart resumes after the last saved step and
sends the shipment in flight again under the same key, which the carrier answers once.

Version 2 renames the checkpoint's field, and with --grams also changes a tool's arguments:
  - it renames the checkpoint's field to "cursor", as a refactor does, and migrates a checkpoint
    of version 1 (it reads "step" when there is no "cursor"); --no-migration reads "cursor" only:
    a checkpoint of version 1 makes it fail (KeyError) each time it starts: stranded;
  - with --grams it sends the weight in grams ("weight_g": 1200) where version 1 sent kilograms
    ("weight_kg": 1.2), under the same key: the same parcel is the same shipment. The shipment
    version 1 may have sent before the deploy (the step at a checkpoint of version 1) it sends
    as version 1 did, so that the carrier answers it as the replay it is; --no-in-flight sends
    it in grams, which a carrier with idempotency keys refuses (an idempotency error, 422
    idempotency_error: a key used again with other parameters), and fails each time it starts.
"""

import argparse
import json
import os
import time
import urllib.error
import urllib.request

ORDER = "ORD-1042"
PARCELS = (("books", 1.2), ("lamp", 3.5), ("rug", 8.0))
"""The order's parcels and their weights in kilograms: a step ships one."""

CHECKPOINT = "checkpoint.json"
TRIES = 5


def state_dir():
    """The directory of the durable state."""
    d = os.environ.get("STATE_DIR") or "state"
    os.makedirs(d, exist_ok=True)
    return d


def field(version):
    """The checkpoint's field that holds the steps done: renamed by version 2."""
    return "step" if version == 1 else "cursor"


def load(d, version, migrate):
    """Returns the checkpoint's steps done and whether version 1 wrote it, or (None, False)
    without a checkpoint."""
    path = os.path.join(d, CHECKPOINT)
    if not os.path.exists(path):
        return None, False
    with open(path) as f:
        checkpoint = json.load(f)
    if version == 2 and migrate and "cursor" not in checkpoint:
        return checkpoint["step"], True  # a checkpoint of version 1
    return checkpoint[field(version)], version == 1


def save(d, version, done):
    """Saves the checkpoint atomically and durably."""
    tmp = os.path.join(d, CHECKPOINT + ".tmp")
    with open(tmp, "w") as f:
        json.dump({field(version): done}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(d, CHECKPOINT))
    fd = os.open(d, os.O_RDONLY)  # the rename, durable
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def shipment(grams, parcel, kg):
    """The body of a parcel's shipment: its weight in kilograms (version 1), or in grams."""
    if grams:
        return {"order": ORDER, "parcel": parcel, "weight_g": round(kg * 1000)}
    return {"order": ORDER, "parcel": parcel, "weight_kg": kg}


def ship(body, key):
    """POSTs the shipment, retrying what may not have been applied (a 429, a 5xx, a dropped
    connection) with the same key; returns the carrier's answer."""
    url = os.environ["SHIPPING_API_URL"].rstrip("/") + "/v1/shipments"
    data = json.dumps(body).encode()
    for attempt in range(1, TRIES + 1):
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", "Idempotency-Key": key})
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return json.load(res)
        except urllib.error.HTTPError as err:
            if err.code != 429 and err.code < 500 or attempt == TRIES:
                raise SystemExit("app: shipment %s: %d %s" % (key, err.code, err.read().decode(errors="replace")))
            wait = float(err.headers.get("retry-after") or 2**attempt)
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            if attempt == TRIES:
                raise SystemExit("app: shipment %s: %s" % (key, err))
            wait = 2**attempt
        time.sleep(wait)
    raise AssertionError("unreachable")


def run(version, migrate, grams, in_flight):
    """Ships the parcels from where the checkpoint says, to the end."""
    d = state_dir()
    done, by_v1 = load(d, version, migrate)
    if done is None:
        done = 0
        save(d, version, done)  # the run, recorded before its first shipment
    for i in range(done, len(PARCELS)):
        parcel, kg = PARCELS[i]
        # The step at a checkpoint of version 1 may be in flight: version 1 may have sent it,
        # in kilograms, and the carrier answers the same key only with the same parameters.
        v1_in_flight = by_v1 and i == done and in_flight
        ship(shipment(grams and not v1_in_flight, parcel, kg), "%s-%s" % (ORDER, parcel))
        save(d, version, i + 1)


def dump_state():
    """Prints the steps done, whichever version wrote the checkpoint."""
    path = os.path.join(os.environ.get("STATE_DIR") or "state", CHECKPOINT)
    done = None
    if os.path.exists(path):
        with open(path) as f:
            checkpoint = json.load(f)
        done = checkpoint.get("cursor", checkpoint.get("step"))
    print(json.dumps({"order": ORDER, "shipped": done}))


def main():
    """Parses the flags; runs the job, or dumps its state."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--version", type=int, default=1, choices=(1, 2), help="the version to run")
    p.add_argument("--no-migration", action="store_true", help="version 2 without reading version 1's field")
    p.add_argument("--grams", action="store_true", help="version 2 sending weights in grams")
    p.add_argument("--no-in-flight", action="store_true",
                   help="version 2 --grams sending version 1's shipment in flight in grams")
    p.add_argument("--dump-state", action="store_true", help="print the durable state as JSON and exit")
    flags = p.parse_args()
    if flags.dump_state:
        return dump_state()
    if flags.version == 1 and (flags.no_migration or flags.grams or flags.no_in_flight):
        p.error("--no-migration, --grams and --no-in-flight are version 2's")
    run(flags.version, not flags.no_migration, flags.grams, not flags.no_in_flight)


if __name__ == "__main__":
    main()
