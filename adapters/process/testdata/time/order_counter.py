"""A harness whose concurrent calls depend on the order their replies come back: each thread,
once its first call is answered, takes the next number of a shared counter and puts it in its
second call. Which thread gets which number depends on which reply it saw first: a bug chaoskit
must not pass by luck. Run under chaoskit (PROTOCOL.md)."""

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import chaoskit  # noqa: E402

counter = 0
lock = threading.Lock()


def work(ck, name):
    global counter
    ck.call("create_po", {"line": name}, key="first-" + name)
    with lock:
        counter += 1
        n = counter
    return ck.call("create_po", {"line": name, "n": n}, key="second-" + name).id


def main():
    ck = chaoskit.connect()
    with ThreadPoolExecutor(3) as pool:
        ids = list(pool.map(lambda name: work(ck, name), "abc"))
    ck.done(ids)


if __name__ == "__main__":
    main()
