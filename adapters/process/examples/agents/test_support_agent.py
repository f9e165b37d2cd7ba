"""The standard-library support agent (support_agent.py) under chaoskit, from pytest: a test per
case, its model answered from the cassette and its REST services served by chaoskit, with only
environment variables pointing the agent at them.

    pytest -v test_support_agent.py                   # a kill at every beat and the model's faults
    pytest -k 'kill@3' test_support_agent.py          # one case
    NO_KEY=1 pytest -x test_support_agent.py          # the --no-key twin: a ticket opened twice

It needs the chaoskit command on PATH (go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest)
and the plugin, which conftest.py loads from this repository.
"""

import os


def test_support_agent_survives_crashes(chaoskit):
    argv = ["python3", "support_agent.py"] + (["--no-key"] if os.environ.get("NO_KEY") else [])
    chaoskit.check(
        argv,
        cassette="cassettes/support-agent.json",
        http={
            "POST /v1/tickets": "idempotent-by-header:Idempotency-Key",
            "POST /v1/tickets/{id}/comments": "idempotent-by-header:Idempotency-Key",
            "POST /v1/emails": "idempotent-by-header:Idempotency-Key",
        },
        env={"TICKETS_API_URL": "${CHAOSKIT_HTTP_URL}", "MAIL_API_URL": "${CHAOSKIT_HTTP_URL}"},
        state=["python3", "support_agent.py", "--dump-state"],
        faults=["kill", "model-ratelimit", "model-error"],
    )
