"""The deploy example under chaoskit, from pytest: a test per upgrade schedule.

    pytest -v                          # a test per beat: test_deploy[upgrade@0] ...
    NO_MIGRATION=1 pytest -k upgrade@5 # version 2 without its migration: fails, stranded

It needs the chaoskit command on PATH (go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest)
and the plugin, which conftest.py loads from this repository.
"""

import os


def test_deploy(chaoskit):
    v2 = ["python3", "app.py", "--version", "2"] + (["--no-migration"] if os.environ.get("NO_MIGRATION") else [])
    chaoskit.check(["python3", "app.py"], upgrade=v2, name="deploy", tools={"ship": "idempotent-by-key"},
                   state=["python3", "app.py", "--dump-state"], faults=["upgrade"])
