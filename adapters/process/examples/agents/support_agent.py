#!/usr/bin/env python3
"""support_agent.py: a support agent in plain Python, standard library only, as a team writes
one without an SDK; nothing in it knows chaoskit. A loop over the Chat Completions API with tool
calls: it opens a ticket for a customer's complaint, then comments on it and emails the customer
(the model asks for both at once), then reports.

    python3 support_agent.py               run (or resume) the ticket
    python3 support_agent.py --no-key      buggy: no Idempotency-Key
    python3 support_agent.py --dump-state  print the durable state as JSON (connects nowhere)

Environment: OPENAI_BASE_URL and OPENAI_API_KEY (as the openai SDK reads them), TICKETS_API_URL
(the ticketing service), MAIL_API_URL (the mail service), STATE_DIR or CHAOSKIT_STATE_DIR.

Checkpoint and resume: the conversation is the state. It is saved in conversation.json after
every model answer and after every tool result, atomically and durably (a temporary file,
fsync, rename, fsync of the directory). A process that starts with a conversation picks it up
where it stopped: tool calls of the last answer that have no result are made, else the model is
asked the next turn.

Idempotency keys: each tool call carries Idempotency-Key: RUN:TURN:TOOL, the run id (saved with
the conversation), the model turn that asked for the call, and the tool. All three survive a
crash: a call made again after a restart is the same request, which the service answers once.
Never the tool-call id, which the provider draws afresh when it is asked again.

The buggy twin --no-key sends no key: a call whose result was not saved before a crash is made
again on restart, and the service applies it twice.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

REQUEST_ID = "TK-881"
COMPLAINT = (
    "Support request TK-881 from dana@example.com: 'My laptop arrived with a cracked screen.' "
    "Open a ticket, note on it that a replacement is on its way, and email the customer."
)
MODEL = "gpt-4o-mini"
CHECKPOINT = "conversation.json"
TRIES = 4

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "create_ticket",
            "description": "Open a support ticket. Returns the ticket with its id.",
            "parameters": {
                "type": "object",
                "properties": {
                    "customer": {"type": "string"},
                    "subject": {"type": "string"},
                    "priority": {"type": "string", "enum": ["low", "normal", "high"]},
                },
                "required": ["customer", "subject", "priority"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add_comment",
            "description": "Add an internal comment to a ticket.",
            "parameters": {
                "type": "object",
                "properties": {"ticket_id": {"type": "string"}, "body": {"type": "string"}},
                "required": ["ticket_id", "body"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "send_email",
            "description": "Email a customer.",
            "parameters": {
                "type": "object",
                "properties": {
                    "to": {"type": "string"},
                    "subject": {"type": "string"},
                    "body": {"type": "string"},
                },
                "required": ["to", "subject", "body"],
            },
        },
    },
]


def state_dir():
    d = os.environ.get("STATE_DIR") or os.environ.get("CHAOSKIT_STATE_DIR") or "state"
    os.makedirs(d, exist_ok=True)
    return d


def load(d):
    try:
        with open(os.path.join(d, CHECKPOINT), encoding="utf-8") as f:
            return json.load(f)  # a checkpoint that does not parse fails loudly
    except FileNotFoundError:
        return None


def save(d, doc):
    """Saves doc so that a crash leaves the old checkpoint or the new one, whole."""
    path = os.path.join(d, CHECKPOINT)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def post(url, body, headers, what):
    """POSTs JSON and returns the decoded answer, retrying what may not have been applied (a
    429, a 5xx, a dropped connection) with the same headers, so with the same key."""
    data = json.dumps(body).encode()
    for attempt in range(1, TRIES + 1):
        req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json", **headers})
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                return json.load(res)
        except urllib.error.HTTPError as err:
            retryable = err.code == 429 or err.code >= 500
            if not retryable or attempt == TRIES:
                raise RuntimeError(f"{what}: {err.code} {err.read().decode(errors='replace')}") from None
            wait = float(err.headers.get("retry-after") or 0.5 * 2**attempt)
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            if attempt == TRIES:
                raise RuntimeError(f"{what}: {err}") from None
            wait = 0.5 * 2**attempt
        time.sleep(wait)
    raise AssertionError("unreachable")


def ask_model(messages):
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    answer = post(
        f"{base}/chat/completions",
        {"model": MODEL, "messages": messages, "tools": TOOLS, "temperature": 0},
        {"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
        "the model",
    )
    message = answer["choices"][0]["message"]
    out = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def run_tool(name, args, key):
    headers = {} if key is None else {"Idempotency-Key": key}
    tickets = os.environ["TICKETS_API_URL"].rstrip("/")
    if name == "create_ticket":
        return post(f"{tickets}/v1/tickets", args, headers, name)
    if name == "add_comment":
        ticket = args.pop("ticket_id")
        return post(f"{tickets}/v1/tickets/{ticket}/comments", args, headers, name)
    if name == "send_email":
        return post(f"{os.environ['MAIL_API_URL'].rstrip('/')}/v1/emails", args, headers, name)
    return {"error": f"no tool {name}"}


def main(no_key):
    d = state_dir()
    cp = load(d)
    if cp is None:
        cp = {
            "run_id": f"{REQUEST_ID}-run1",
            "status": "running",
            "messages": [
                {"role": "system", "content": "You are a support agent. Use the tools, then say what you did."},
                {"role": "user", "content": COMPLAINT},
            ],
        }
        save(d, cp)
    while cp["status"] != "done":
        messages = cp["messages"]
        answers = [m for m in messages if m["role"] == "assistant"]
        last = answers[-1] if answers else None
        done_ids = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        pending = [c for c in (last or {}).get("tool_calls", []) if c["id"] not in done_ids]
        if pending:
            turn = len(answers)
            for call in pending:
                name = call["function"]["name"]
                key = None if no_key else f"{cp['run_id']}:{turn}:{name}"
                result = run_tool(name, json.loads(call["function"]["arguments"] or "{}"), key)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
                save(d, cp)
            continue
        if last is not None and messages[-1] is last:
            cp["status"] = "done"  # the model answered without tool calls: its text is the report
            save(d, cp)
            break
        messages.append(ask_model(messages))
        save(d, cp)


def dump_state():
    """The conversation as the oracle compares it: without the tool-call ids the provider draws."""
    cp = load(state_dir())
    if cp is None:
        return {"status": "not-started"}
    plain = []
    for m in cp["messages"]:
        out = {"role": m["role"], "content": m.get("content")}
        if m.get("tool_calls"):
            out["tool_calls"] = [
                {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"] or "{}")} for c in m["tool_calls"]
            ]
        plain.append(out)
    return {"run_id": cp["run_id"], "status": cp["status"], "messages": plain}


if __name__ == "__main__":
    if "--dump-state" in sys.argv[1:]:
        print(json.dumps(dump_state()))
    else:
        main("--no-key" in sys.argv[1:])
