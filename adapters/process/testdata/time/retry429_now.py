"""A harness that retries a rate limit at once, ignoring the retry-after it was given. Run
under chaoskit (PROTOCOL.md)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import chaoskit  # noqa: E402


def ask(ck, purpose):
    while True:
        try:
            return ck.model(purpose, "ok", latency=0.5)
        except chaoskit.RateLimited:
            pass


def main():
    ck = chaoskit.connect()
    ck.done({"answers": [ask(ck, "plan"), ask(ck, "act")]})


if __name__ == "__main__":
    main()
