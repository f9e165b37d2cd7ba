"""One Chat Completions call with Python's urllib against the stand-in, under the fault the Go
test injects; prints what the caller saw as one JSON line, as faults/call.mjs does:

    python3 faults/urllib_call.py whole|stream TIMEOUT_SECONDS

urllib has no retries of its own: every fault reaches the caller on the first attempt."""
import json
import os
import sys
import time
import urllib.request

mode, timeout = sys.argv[1], float(sys.argv[2])
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "faults: restock A-1"}]}
if mode == "stream":
    body["stream"] = True
req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"},
)
out, partial, finish = {}, "", None
start = time.monotonic()
try:
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        if mode == "stream":
            for raw in resp:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                choice = json.loads(line[6:])["choices"][0]
                partial += choice["delta"].get("content") or ""
                finish = choice.get("finish_reason") or finish
            out["text"] = partial
        else:
            choice = json.load(resp)["choices"][0]
            finish = choice["finish_reason"]
            out["text"] = choice["message"]["content"]
    out["ok"] = True
except Exception as e:  # what reaches the caller, whatever it is
    out["ok"] = False
    out["error"] = {"class": type(e).__name__, "message": str(e)[:300]}
    if getattr(e, "code", None) is not None:
        out["error"]["status"] = e.code
out["elapsed_ms"] = int((time.monotonic() - start) * 1000)
if finish is not None:
    out["finish"] = finish
if not out["ok"]:
    out["partial"] = partial
print(json.dumps(out))
