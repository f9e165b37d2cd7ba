"""A harness that asks the model twice, and retries a rate limit after the retry-after it was
given, with time.sleep, as SDKs do. Run under chaoskit (PROTOCOL.md)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import chaoskit  # noqa: E402


def ask(ck, purpose):
    while True:
        try:
            return ck.model(purpose, "ok", latency=0.5)
        except chaoskit.RateLimited as e:
            time.sleep(e.retry_after)


def main():
    ck = chaoskit.connect()
    ck.done({"answers": [ask(ck, "plan"), ask(ck, "act")]})


if __name__ == "__main__":
    main()
