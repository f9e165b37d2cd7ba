"""Python's standard library against the stand-in: a Chat Completions request with urllib,
whole and streamed (SSE read line by line), as an agent without an SDK makes it."""
import json
import os
import urllib.request

BASE = os.environ["OPENAI_BASE_URL"]
KEY = os.environ["OPENAI_API_KEY"]


def post(body):
    req = urllib.request.Request(
        BASE + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"},
    )
    return urllib.request.urlopen(req, timeout=30)


body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "restock A-1"}]}
with post(body) as resp:
    whole = json.load(resp)["choices"][0]["message"]

text, calls = "", {}
with post(dict(body, stream=True)) as resp:
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        delta = json.loads(line[6:])["choices"][0]["delta"]
        text += delta.get("content") or ""
        for c in delta.get("tool_calls") or []:
            call = calls.setdefault(c["index"], {"name": "", "args": ""})
            call["name"] += c.get("function", {}).get("name") or ""
            call["args"] += c.get("function", {}).get("arguments") or ""

print(json.dumps({
    "text": whole["content"],
    "calls": [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])} for c in whole["tool_calls"]],
    "streamed_text": text,
    "streamed_calls": [{"name": c["name"], "args": json.loads(c["args"])} for _, c in sorted(calls.items())],
}))
