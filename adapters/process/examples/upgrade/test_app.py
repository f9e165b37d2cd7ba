"""The deploy example under chaoskit, from pytest: a test per upgrade schedule, the carrier's
API served by chaoskit as a REST double and only environment variables pointing the job at it.

    pytest -v                          # a test per beat: test_deploy[upgrade@0] ...
    NO_MIGRATION=1 pytest -k upgrade@3 # version 2 without its migration: fails, stranded

It needs the chaoskit command on PATH (go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest)
and the plugin, which conftest.py loads from this repository.
"""

import os


def test_deploy(chaoskit):
    v2 = ["python3", "app.py", "--version", "2"] + (["--no-migration"] if os.environ.get("NO_MIGRATION") else [])
    chaoskit.check(
        ["python3", "app.py"],
        upgrade=v2,
        name="deploy",
        http={"POST /v1/shipments": "idempotent-by-header:Idempotency-Key"},
        env={"SHIPPING_API_URL": "${CHAOSKIT_HTTP_URL}", "STATE_DIR": "${CHAOSKIT_STATE_DIR}"},
        state=["python3", "app.py", "--dump-state"],
        faults=["upgrade"],
    )
