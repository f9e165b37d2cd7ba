"""A purchasing agent as a team writes one with Python's standard library: it asks an
OpenAI-compatible model (OPENAI_BASE_URL, OPENAI_API_KEY), runs the tools the model calls --
create_po against the purchasing service's REST API (PURCHASING_URL) with an Idempotency-Key,
notify against an MCP server over streamable HTTP (NOTIFY_MCP_URL) with its key in the
arguments -- and keeps the conversation in buyer/conv.json under STATE_DIR, written whole and
fsynced after every step. Nothing in it knows chaoskit.

  python3 buyer.py            run or resume the conversation
  python3 buyer.py --no-key   the same, sending no idempotency keys (a bug)
  python3 buyer.py --dump-state   print the conversation's durable state as JSON
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

STATE = os.path.join(os.environ["STATE_DIR"], "conv.json")
NO_KEY = "--no-key" in sys.argv


class Retry(Exception):
    def __init__(self, why, after=1.0):
        super().__init__(why)
        self.after = after


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        if e.code == 429:
            raise Retry("429", float(e.headers.get("retry-after", "1")))
        if e.code >= 500:
            raise Retry(str(e.code))
        raise
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError) as e:
        raise Retry(str(e))


def with_retries(f):
    for attempt in range(8):
        try:
            return f()
        except Retry as r:
            if attempt == 7:
                raise
            time.sleep(max(r.after, 1.0))


def save(conv):
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(conv, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, STATE)
    d = os.open(os.path.dirname(STATE), os.O_RDONLY)
    os.fsync(d)
    os.close(d)


def load():
    try:
        with open(STATE) as f:
            return json.load(f)
    except FileNotFoundError:
        return [{"role": "user", "content": "order what the warehouse needs"}]


def run_tool(call, step):
    name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
    key = "%s-%d" % (name, step)
    if name == "create_po":
        headers = {} if NO_KEY else {"Idempotency-Key": key}
        out = post(os.environ["PURCHASING_URL"] + "/v1/purchase_orders", args, headers)
        return out.get("id", "")
    if name == "notify":
        if not NO_KEY:
            args["key"] = key
        out = post(os.environ["NOTIFY_MCP_URL"],
                   {"jsonrpc": "2.0", "id": step, "method": "tools/call",
                    "params": {"name": "notify", "arguments": args}},
                   {"Accept": "application/json, text/event-stream"})
        result = out.get("result") or {}
        if "error" in out or result.get("isError"):
            raise Retry("notify: %s" % (out.get("error") or result))
        return result["content"][0]["text"]
    raise SystemExit("the model called a tool this agent has not: %s" % name)


def main():
    if "--dump-state" in sys.argv:
        print(json.dumps(load()))
        return
    base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
    conv = load()
    while True:
        last = conv[-1]
        if last["role"] == "assistant" and not last.get("tool_calls"):
            print(last["content"])
            return
        if last["role"] == "assistant":
            for call in last["tool_calls"]:
                out = with_retries(lambda: run_tool(call, len(conv)))
                conv.append({"role": "tool", "tool_call_id": call["id"], "content": out})
            save(conv)
            continue
        answer = with_retries(lambda: post(base + "/chat/completions", {"model": "gpt-4o-mini", "messages": conv},
                                           {"Authorization": "Bearer " + key}))
        msg = answer["choices"][0]["message"]
        conv.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls") and v is not None})
        save(conv)


main()
