"""Unit tests of chaoskit.py against a fake chaoskit: a thread serving the protocol on a Unix
socket, recording every line it reads. Run them with `python3 -m unittest` in this directory."""

import asyncio
import datetime
import json
import os
import select
import shutil
import socket
import tempfile
import threading
import time
import unittest
from unittest import mock

import chaoskit

TOKEN = "0123abcd"


class FakeChaoskit:
    """Serves one connection as chaoskit would: it checks the hello, then answers each request
    with handler(request) (a response dict without id and ok, or an ("error", code, message,
    retry_after_ms) tuple, or raw bytes sent as they are). It records the lines it reads and
    notes when a request arrives before the previous one was answered."""

    def __init__(self, handler=None, hello=None):
        self.dir = tempfile.mkdtemp(prefix="chaoskit-pytest-")
        self.path = os.path.join(self.dir, "sock")
        self.handler = handler or (lambda req: {})
        self.hello = hello or {"attempt": 2, "worker": 1, "state_dir": "/state"}
        self.lines = []
        self.overlaps = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        """Stops serving and removes the socket's directory."""
        self.listener.close()
        self.thread.join(5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def connect(self, token=TOKEN):
        """Returns a client connected to this server."""
        return chaoskit.connect(self.path, token)

    def requests(self):
        """The requests read so far, decoded."""
        return [json.loads(line) for line in self.lines]

    def _serve(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                self.lines.append(line)
                req = json.loads(line)
                answer = self._answer(req)
                if self._pending(conn):
                    self.overlaps += 1
                if answer is None:
                    return
                conn.sendall(answer)

    def _answer(self, req):
        if req["op"] == "hello":
            if req.get("token") != TOKEN:
                return _line({"ok": False, "error": {"code": "bad_request", "message": "wrong token"}})
            if req.get("v") != 1:
                msg = "the command speaks protocol version %d; this chaoskit speaks version 1" % req.get("v")
                return _line({"id": req["id"], "ok": False, "error": {"code": "version", "message": msg}})
            return _line(dict(self.hello, id=req["id"], ok=True, v=1))
        r = self.handler(req)
        if r is None or isinstance(r, bytes):
            return r
        if isinstance(r, tuple):
            _, code, message, retry = r
            err = {"code": code, "message": message}
            if retry:
                err["retry_after_ms"] = retry
            return _line({"id": req["id"], "ok": False, "error": err})
        return _line(dict(r, id=req["id"], ok=True))

    @staticmethod
    def _pending(conn):
        """Whether the client sent more before this answer: it must wait for it."""
        time.sleep(0.001)
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable)


def _line(obj):
    return json.dumps(obj).encode() + b"\n"


class ServerTest(unittest.TestCase):
    """A test with a fake chaoskit, self.server, and a client connected to it, self.ck."""

    handler = None

    def setUp(self):
        self.server = FakeChaoskit(type(self).handler)
        self.addCleanup(self.server.close)
        self.ck = self.server.connect()
        self.addCleanup(self.ck.close)

    def last(self):
        return self.server.requests()[-1]


class ConnectTest(unittest.TestCase):
    def test_not_under_chaoskit(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaises(chaoskit.NotUnderChaoskit) as cm:
                chaoskit.connect()
        self.assertIn("CHAOSKIT_SOCKET", str(cm.exception))

    def test_hello_from_the_environment(self):
        server = FakeChaoskit()
        self.addCleanup(server.close)
        env = {"CHAOSKIT_SOCKET": server.path, "CHAOSKIT_TOKEN": TOKEN}
        with mock.patch.dict(os.environ, env), chaoskit.connect() as ck:
            self.assertEqual((ck.process, ck.attempt, ck.worker, ck.state_dir), (2, 2, 1, "/state"))
        self.assertEqual(server.requests(), [{"id": 1, "op": "hello", "v": 1, "token": TOKEN, "client": "python/1"}])

    def test_wrong_token(self):
        server = FakeChaoskit()
        self.addCleanup(server.close)
        with self.assertRaises(chaoskit.BadRequest) as cm:
            server.connect(token="nope")
        self.assertEqual(cm.exception.code, "bad_request")
        self.assertEqual(str(cm.exception), "chaoskit: wrong token")

    def test_version(self):
        server = FakeChaoskit()
        self.addCleanup(server.close)
        with mock.patch.object(chaoskit, "VERSION", 2):
            with self.assertRaises(chaoskit.VersionMismatch) as cm:
                server.connect()
        self.assertIn("speaks protocol version 2; this chaoskit speaks version 1", str(cm.exception))

    def test_no_server(self):
        with self.assertRaises(chaoskit.ProtocolError):
            chaoskit.connect("/nonexistent/chaoskit.sock", TOKEN)


def _world(req):
    """Answers each operation as chaoskit's world would, from what the request says."""
    op = req["op"]
    if op == "call":
        return {"reply_id": req["tool"] + "-1", "replayed": "key" in req, "topic": "t/" + req["tool"]}
    if op == "lookup":
        return {"found": req["ref"] == "order-1", "reply_id": req["tool"] + "-1"}
    if op == "model":
        return {"text": req["reply"]}
    if op == "now":
        return {"now_ms": 1_700_000_000_123}
    if op in ("await", "messages"):
        return {"messages": [{"topic": req["topic"], "body": "done", "seq": 1}]}
    if op in ("acquire", "renew"):
        name = req["name"] if op == "acquire" else req["lease"]["name"]
        return {"lease": {"name": name, "holder": "worker-0", "token": 7, "expires_ms": 1000 + req["ttl_ms"]}}
    if op == "random":
        return {"value": 2**64 - 1}
    return {}


class RequestTest(ServerTest):
    """Each method's request on the wire, and what it makes of the response."""

    handler = staticmethod(_world)

    def test_framing(self):
        self.ck.call("create_po", {"note": "two\nlines", "vendor": "Zoë"}, key="k")
        raw = self.server.lines[-1]
        self.assertTrue(raw.endswith(b"\n"))
        self.assertEqual(raw.count(b"\n"), 1)
        self.assertIn("Zoë".encode(), raw)  # UTF-8 on the wire
        self.assertEqual(json.loads(raw)["args"], {"note": "two\nlines", "vendor": "Zoë"})

    def test_call(self):
        r = self.ck.call("create_po", {"usd": 84000}, key="run:3", fence=4, timeout=1.5)
        self.assertEqual(r, chaoskit.Reply(id="create_po-1", replayed=True, topic="t/create_po"))
        self.assertEqual(self.last(), {"id": 2, "op": "call", "tool": "create_po", "args": {"usd": 84000},
                                       "key": "run:3", "fence": 4, "timeout_ms": 1500})
        with self.assertRaises(ValueError):
            self.ck.call("create_po", None, fence=1 << 64)
        self.ck.call("create_po", None, ref="order-1")
        self.assertEqual(self.last(), {"id": 3, "op": "call", "tool": "create_po", "args": None, "ref": "order-1"})

    def test_lookup(self):
        self.assertEqual(self.ck.lookup("create_po", "order-1", timeout=5), chaoskit.Reply(id="create_po-1"))
        self.assertEqual(self.last(), {"id": 2, "op": "lookup", "tool": "create_po", "ref": "order-1",
                                       "timeout_ms": 5000})
        self.assertIsNone(self.ck.lookup("create_po", "order-2"))

    def test_refuse(self):
        self.ck.refuse("cannot tell whether order 7 was filed")
        self.assertEqual(self.last(), {"id": 2, "op": "refuse", "reason": "cannot tell whether order 7 was filed"})

    def test_model(self):
        self.assertEqual(self.ck.model("plan step 3", "file it", latency=2, timeout=60), "file it")
        self.assertEqual(self.last(), {"id": 2, "op": "model", "purpose": "plan step 3", "reply": "file it",
                                       "latency_ms": 2000, "timeout_ms": 60000})

    def test_time(self):
        now = self.ck.now()
        self.assertEqual(now, datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=datetime.timezone.utc))
        self.ck.sleep(datetime.timedelta(hours=52))
        self.assertEqual(self.last(), {"id": 3, "op": "sleep", "ms": 52 * 3600 * 1000})
        self.ck.sleep(datetime.timedelta(days=365))  # a year: the longest chaoskit takes
        self.assertEqual(self.last(), {"id": 4, "op": "sleep", "ms": 31_536_000_000})
        two_years = datetime.timedelta(days=730)  # chaoskit would fail the process: "ms ... is not a duration chaoskit takes"
        for bad in (-1, float("nan"), float("inf"), 31_536_000.001, two_years):
            with self.assertRaisesRegex(ValueError, r"sleep must be from 0 to 31536000 seconds \(a year\)", msg=bad):
                self.ck.sleep(bad)
        with self.assertRaisesRegex(ValueError, "ttl must be from 0 to 31536000 seconds"):
            self.ck.acquire("run-1", ttl=two_years)
        with self.assertRaisesRegex(ValueError, "latency must be from 0 to 31536000 seconds"):
            self.ck.model("plan", "it", latency=two_years)
        for bad in (-1, float("nan")):
            with self.assertRaisesRegex(ValueError, "timeout must be from 0", msg=bad):
                self.ck.await_("t", timeout=bad)
        self.assertEqual(len(self.server.lines), 4, "a duration out of range was sent")
        for forever in (float("inf"), two_years):  # chaoskit counts a longer timeout as a year
            self.ck.await_("t", timeout=forever)
            self.assertEqual(self.last()["timeout_ms"], 31_536_000_000)

    def test_messages(self):
        want = [chaoskit.Message(topic="approvals", body="done", seq=1)]
        self.assertEqual(self.ck.await_("approvals", timeout=3600), want)
        self.assertEqual(self.last(), {"id": 2, "op": "await", "topic": "approvals", "timeout_ms": 3600000})
        self.assertEqual(self.ck.messages("approvals"), want)
        self.assertEqual(self.last(), {"id": 3, "op": "messages", "topic": "approvals"})

    def test_leases(self):
        lease = self.ck.acquire("run-1", ttl=30)
        self.assertEqual(lease, chaoskit.Lease(name="run-1", holder="worker-0", token=7, expires_ms=31000))
        self.assertEqual(lease.expires, datetime.datetime(1970, 1, 1, 0, 0, 31, tzinfo=datetime.timezone.utc))
        self.assertEqual(self.last(), {"id": 2, "op": "acquire", "name": "run-1", "ttl_ms": 30000})
        self.ck.renew(lease, ttl=0.25)
        wire = {"name": "run-1", "holder": "worker-0", "token": 7, "expires_ms": 31000}
        self.assertEqual(self.last(), {"id": 3, "op": "renew", "lease": wire, "ttl_ms": 250})
        self.ck.release(lease)
        self.assertEqual(self.last(), {"id": 4, "op": "release", "lease": wire})

    def test_mark_random_done(self):
        self.ck.mark("step 3 durable")
        self.assertEqual(self.last(), {"id": 2, "op": "mark", "label": "step 3 durable"})
        self.assertEqual(self.ck.random(), 2**64 - 1)
        self.ck.done({"filed": 3, "ids": ["a"]})
        self.assertEqual(self.last(), {"id": 4, "op": "done", "result": {"filed": 3, "ids": ["a"]}})
        self.ck.done(None)
        self.assertEqual(self.last(), {"id": 5, "op": "done", "result": None})


class ErrorTest(unittest.TestCase):
    """Error responses become the exception of their code."""

    def answer(self, response):
        server = FakeChaoskit(lambda req: response)
        self.addCleanup(server.close)
        ck = server.connect()
        self.addCleanup(ck.close)
        return ck

    def test_every_code(self):
        for code, cls in [("transient", chaoskit.Transient), ("ambiguous", chaoskit.Ambiguous),
                          ("timeout", chaoskit.Timeout), ("fenced", chaoskit.Fenced),
                          ("key_reused", chaoskit.KeyReused), ("lease_held", chaoskit.LeaseHeld), ("lease_lost", chaoskit.LeaseLost),
                          ("rate_limited", chaoskit.RateLimited), ("model_server", chaoskit.ModelServer),
                          ("context_length", chaoskit.ContextLength), ("deadline", chaoskit.Deadline),
                          ("bad_request", chaoskit.BadRequest), ("version", chaoskit.VersionMismatch)]:
            with self.subTest(code=code):
                ck = self.answer(("error", code, "what happened", 0))
                with self.assertRaises(cls) as cm:
                    ck.call("create_po", 1)
                self.assertIsInstance(cm.exception, chaoskit.ChaoskitError)
                self.assertEqual(cm.exception.code, code)
                self.assertEqual(cm.exception.message, "what happened")
                self.assertEqual(cm.exception.retry_after, 0)

    def test_retry_after(self):
        ck = self.answer(("error", "rate_limited", "429", 20000))
        with self.assertRaises(chaoskit.RateLimited) as cm:
            ck.model("plan", "x")
        self.assertEqual(cm.exception.retry_after, 20.0)

    def test_retryable_groups(self):
        self.assertTrue(all(issubclass(c, chaoskit.ChaoskitError) for c in chaoskit.RETRY_WITH_SAME_KEY))
        self.assertEqual(set(chaoskit.MAYBE_APPLIED), {chaoskit.Ambiguous, chaoskit.Timeout})

    def test_unknown_code(self):
        ck = self.answer(("error", "gremlins", "new in version 9", 0))
        with self.assertRaises(chaoskit.ChaoskitError) as cm:
            ck.mark("x")
        self.assertIs(type(cm.exception), chaoskit.ChaoskitError)
        self.assertEqual(cm.exception.code, "gremlins")

    def test_refused_without_reason(self):
        ck = self.answer(b'{"ok":false}\n')
        with self.assertRaises(chaoskit.BadRequest):
            ck.mark("x")

    def test_id_echo(self):
        ck = self.answer(b'{"id":99,"ok":true}\n')
        with self.assertRaises(chaoskit.ProtocolError) as cm:
            ck.mark("x")
        self.assertIn("response 99 to request 2", str(cm.exception))

    def test_no_id_is_accepted(self):
        self.answer(b'{"ok":true}\n').mark("x")

    def test_malformed_response(self):
        ck = self.answer(b'{"ok":tru\n')
        with self.assertRaises(chaoskit.ProtocolError) as cm:
            ck.mark("x")
        self.assertIn("malformed response", str(cm.exception))

    def test_connection_closed(self):
        ck = self.answer(None)  # the server hangs up instead of answering
        with self.assertRaises(chaoskit.ProtocolError) as cm:
            ck.mark("x")
        self.assertIn("no response", str(cm.exception))


class ConcurrencyTest(unittest.TestCase):
    def test_requests_in_flight_together(self):
        """Threads sharing a client have their requests in flight at once, and each gets its
        own answer; the ids are distinct."""
        server = FakeChaoskit(lambda req: {"text": req["purpose"]})
        self.addCleanup(server.close)
        ck = server.connect()
        self.addCleanup(ck.close)
        wrong = []
        barrier = threading.Barrier(6)

        def work(n):
            barrier.wait()
            for i in range(10):
                purpose = "thread %d call %d" % (n, i)
                if ck.model(purpose, "x") != purpose:
                    wrong.append(purpose)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(wrong, [])
        self.assertGreater(server.overlaps, 0)
        ids = sorted(r["id"] for r in server.requests())
        self.assertEqual(ids, list(range(1, 62)))

    def test_out_of_order(self):
        """Responses come back by id, in any order."""
        with PipelineFake(3) as fake:
            ck = chaoskit.connect(fake.path, TOKEN)
            self.addCleanup(ck.close)
            got = {}

            def work(n):
                got[n] = ck.model("p%d" % n, "x")

            threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            self.assertEqual(got, {0: "p0", 1: "p1", 2: "p2"})

    def test_asyncio_gather(self):
        """AsyncClient's requests awaited together are in flight together."""
        with PipelineFake(5) as fake:
            async def main():
                ck = await chaoskit.connect_async(fake.path, TOKEN)
                try:
                    self.assertEqual((ck.process, ck.worker), (2, 1))
                    return await asyncio.gather(*[ck.model("p%d" % n, "x") for n in range(5)])
                finally:
                    ck.close()
            self.assertEqual(asyncio.run(main()), ["p0", "p1", "p2", "p3", "p4"])

    def test_asyncio_errors(self):
        """AsyncClient raises the error a response carries, by code."""
        server = FakeChaoskit(lambda req: ("error", "rate_limited", "slow down", 1500))
        self.addCleanup(server.close)

        async def main():
            ck = await chaoskit.connect_async(server.path, TOKEN)
            try:
                await ck.model("p", "x")
            finally:
                ck.close()
        with self.assertRaises(chaoskit.RateLimited) as cm:
            asyncio.run(main())
        self.assertEqual(cm.exception.retry_after, 1.5)


class PipelineFake:
    """A fake chaoskit that reads n requests after the hello, then answers them in the reverse
    order, each with its purpose as text."""

    def __init__(self, n):
        self.n = n
        self.dir = tempfile.mkdtemp(prefix="chaoskit-pytest-")
        self.path = os.path.join(self.dir, "sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.listener.close()
        self.thread.join(5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _serve(self):
        conn, _ = self.listener.accept()
        with conn, conn.makefile("rb") as lines:
            hello = json.loads(lines.readline())
            conn.sendall(_line({"id": hello["id"], "ok": True, "v": 1, "process": 2, "worker": 1}))
            reqs = [json.loads(lines.readline()) for _ in range(self.n)]
            for req in reversed(reqs):
                conn.sendall(_line({"id": req["id"], "ok": True, "text": req["purpose"]}))
            lines.readline()


if __name__ == "__main__":
    unittest.main()
