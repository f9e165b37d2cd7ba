"""The Burr example under chaoskit, from pytest: a test per fault schedule.

    pytest -v                     # 31 cases, each a test: test_survives_crashes[kill@3], ...
    pytest -k 'tool-timeout@4'    # one case
    BROKEN=1 pytest -x            # the --broken variant: stops at the first duplicate order

It needs the chaoskit command on PATH (go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest)
and the plugin, which conftest.py loads from this repository.
"""

import os


def test_survives_crashes(chaoskit):
    argv = ["python3", "app.py"] + (["--broken"] if os.environ.get("BROKEN") else [])
    chaoskit.check(argv, tools={"create_po": "idempotent-by-key,latency=1s"},
                   state=["python3", "app.py", "--dump-state"], faults=["kill", "tool"])
