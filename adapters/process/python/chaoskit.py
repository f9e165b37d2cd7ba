"""The Python client of chaoskit's process protocol (adapters/process/PROTOCOL.md, version 1).

A harness that runs as its own process reaches chaoskit's world through this module: tools with
side effects, a scripted model, virtual time, leases, messages, and progress marks. It is one
file with nothing beyond the standard library, so it can be copied next to any harness.

    import chaoskit

    ck = chaoskit.connect()              # raises NotUnderChaoskit outside chaoskit
    reply = ck.call("create_po", {"vendor": "acme", "usd": 84000}, key="run-1:po")
    ck.mark("po filed")                  # right after the step became durable
    ck.done({"po": reply.id})

Each request is a beat, at which chaoskit may SIGKILL the process: the call then never returns.
Durations are seconds (floats or timedeltas) here and whole milliseconds of virtual time on the
wire, at most a year (MAX_MS): a longer sleep, latency or ttl is a ValueError, a longer timeout
counts as a year.

A Client is safe to share between threads: each request is sent at once, with an id of its
own, and answered by id, so requests from several threads (a ThreadPoolExecutor fanning out
calls) are in flight together and chaoskit admits them in a canonical order, the same in every
run. For asyncio, `ck = await chaoskit.connect_async()` gives an AsyncClient with the same
methods as coroutines (`await asyncio.gather(ck.call(...), ck.call(...))`). time.sleep and
asyncio.sleep wait in virtual time under chaoskit (PROTOCOL.md, "Time").
"""

import asyncio

import datetime
import json
import os
import socket
import threading
from collections import namedtuple

VERSION = 1
"""The protocol version this client speaks."""

CLIENT_NAME = "python/%d" % VERSION
"""How the client names itself in its hello."""

MAX_LINE = 16 << 20
"""The longest line, in bytes, either side may send."""

MAX_MS = 31_536_000_000
"""The longest duration chaoskit takes, in milliseconds: a year of virtual time (PROTOCOL.md).
chaoskit refuses a longer sleep, latency or lease ttl (the process fails), so the client raises
ValueError first; a longer timeout counts as a year, so the client sends it as a year (an
infinite one included: "forever")."""


class NotUnderChaoskit(RuntimeError):
    """connect() found no CHAOSKIT_SOCKET: the program was not started by chaoskit."""


class ChaoskitError(Exception):
    """An error chaoskit answered a request with; .code is the protocol's error code.

    Each code has its own subclass, so `except chaoskit.Ambiguous` reads as the protocol's
    table of errors does; a code this client does not know comes as a ChaoskitError. .message
    is chaoskit's text, and .retry_after the seconds to wait before retrying (RateLimited; 0
    for the others)."""

    code = None

    def __init__(self, message, code=None, retry_after=0.0):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.retry_after = retry_after

    def __str__(self):
        return "chaoskit: %s" % self.message


class ProtocolError(ChaoskitError):
    """The connection broke or chaoskit's answer made no sense (no code of the protocol)."""


class Transient(ChaoskitError):
    """The tool failed before applying the call: retry it, with the same key."""

    code = "transient"


class Ambiguous(ChaoskitError):
    """The call was applied but its reply was lost: retry with the same key, or look it up."""

    code = "ambiguous"


class Timeout(ChaoskitError):
    """The call's deadline passed and it may still be applied: as Ambiguous."""

    code = "timeout"


class Fenced(ChaoskitError):
    """The tool has seen a newer fencing token: another worker has the run; stop."""

    code = "fenced"


class KeyReused(ChaoskitError):
    """The call's key was first used with other arguments: nothing was applied. A bug of the
    harness, as Stripe answers it: a call with other arguments needs a key of its own."""

    code = "key_reused"


class LeaseHeld(ChaoskitError):
    """Another worker holds the lease: wait and try again."""

    code = "lease_held"


class LeaseLost(ChaoskitError):
    """The lease expired or was taken over: stop acting for it."""

    code = "lease_lost"


class RateLimited(ChaoskitError):
    """The model is rate limited: retry after .retry_after seconds."""

    code = "rate_limited"


class ModelServer(ChaoskitError):
    """The model failed (a 500): retry with backoff."""

    code = "model_server"


class ContextLength(ChaoskitError):
    """The model refused the call: the context is too long."""

    code = "context_length"


class Deadline(ChaoskitError):
    """A wait's timeout passed (await, model) before its answer."""

    code = "deadline"


class BadRequest(ChaoskitError):
    """chaoskit refused the request; it fails the process, so there is nothing to retry."""

    code = "bad_request"


class VersionMismatch(ChaoskitError):
    """chaoskit speaks another version of the protocol."""

    code = "version"


_BY_CODE = {cls.code: cls for cls in (Transient, Ambiguous, Timeout, Fenced, KeyReused, LeaseHeld, LeaseLost,
                                      RateLimited, ModelServer, ContextLength, Deadline,
                                      BadRequest, VersionMismatch)}

MAYBE_APPLIED = (Ambiguous, Timeout)
"""The errors after which a call may have been applied: retry with the same key only."""

RETRY_WITH_SAME_KEY = (Transient, Ambiguous, Timeout)
"""The errors of a tool call that a retry under the same idempotency key resolves."""


def error_for(code, message, retry_after_ms=0):
    """Returns the exception for an error response: the subclass of ChaoskitError for code."""
    cls = _BY_CODE.get(code, ChaoskitError)
    return cls(message, code=code, retry_after=(retry_after_ms or 0) / 1000)


class Reply(namedtuple("Reply", "id replayed topic", defaults=("", False, ""))):
    """A tool's answer to a call: .id names what the call created (a purchase order's number,
    say); .replayed says the tool had seen the key, so this is its earlier reply and nothing was
    applied again; .topic is where an asynchronous tool will post its completion (see
    await_)."""

    __slots__ = ()


class Message(namedtuple("Message", "topic body seq")):
    """A message posted on a topic (an asynchronous tool's completion, a human's decision):
    .body, and .seq, its number on the topic, from 0."""

    __slots__ = ()


class Lease(namedtuple("Lease", "name holder token expires_ms", defaults=("", 0, 0))):
    """A time-limited claim on a named resource: .holder holds it, .token is its fencing token
    (pass it to fenced tools as call(fence=)), and .expires_ms is when it expires, in Unix
    milliseconds of virtual time (see .expires)."""

    __slots__ = ()

    @property
    def expires(self):
        """When the lease expires, as an aware UTC datetime of virtual time."""
        return _from_ms(self.expires_ms)

    def _wire(self):
        return self._asdict()


def _from_ms(ms):
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return epoch + datetime.timedelta(milliseconds=ms)


def _ms(seconds, what, cap=False):
    """Converts seconds (a number or a timedelta) to whole milliseconds for the wire; None (no
    value) stays None. A negative duration or NaN is a ValueError, and so is one past MAX_MS
    unless cap, which sends it as MAX_MS (a timeout: chaoskit counts it as a year)."""
    if seconds is None:
        return None
    if isinstance(seconds, datetime.timedelta):
        seconds = seconds.total_seconds()
    if cap and seconds > MAX_MS / 1000:
        return MAX_MS
    if not 0 <= seconds <= MAX_MS / 1000:  # NaN too
        raise ValueError("chaoskit: %s must be from 0 to %d seconds (a year), not %r" % (what, MAX_MS // 1000, seconds))
    return int(round(seconds * 1000))


def connect(path=None, token=None):
    """Connects to the chaoskit that started the process and says hello.

    path and token default to CHAOSKIT_SOCKET and CHAOSKIT_TOKEN. Raises NotUnderChaoskit when
    there is no socket to connect to, VersionMismatch when chaoskit speaks another version, and
    BadRequest when it refuses the hello (a wrong token)."""
    path, token = _where(path, token)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as e:
        sock.close()
        raise ProtocolError("connecting to %s: %s" % (path, e)) from e
    client = Client(sock)
    try:
        client._hello(client._do(_hello(token)))
    except BaseException:
        client.close()
        raise
    return client


async def connect_async(path=None, token=None):
    """Connects as connect() does, for asyncio: returns an AsyncClient, whose methods are
    Client's as coroutines."""
    path, token = _where(path, token)
    try:
        reader, writer = await asyncio.open_unix_connection(path, limit=MAX_LINE + 1)
    except OSError as e:
        raise ProtocolError("connecting to %s: %s" % (path, e)) from e
    client = AsyncClient(reader, writer)
    try:
        client._hello(await client._do(_hello(token)))
    except BaseException:
        client.close()
        raise
    return client


def _where(path, token):
    path = path or os.environ.get("CHAOSKIT_SOCKET", "")
    if not path:
        raise NotUnderChaoskit("chaoskit: CHAOSKIT_SOCKET is not set: not running under chaoskit")
    if token is None:
        token = os.environ.get("CHAOSKIT_TOKEN", "")
    return path, token


def _hello(token):
    return {"op": "hello", "v": VERSION, "token": token, "client": CLIENT_NAME}


# Each operation is written once, as a plan: it checks its arguments and returns the request
# and a function of the response that gives the method's result. Client and AsyncClient make
# their methods of the plans, blocking and as coroutines.

def _call(tool, args, key=None, fence=0, timeout=None, ref=None):
    """Calls a tool and returns its Reply.

    args say what the call does and identify the effect (any JSON value); key is the
    idempotency key (a tool that honours keys applies a key once); fence is the caller's
    lease token, for fenced tools; timeout (seconds), if given, is the call's deadline; ref
    is the harness's own reference for the effect, which the tool keeps for ever (unlike a
    key it may forget), so that lookup() finds the effect by it. Raises Transient (not
    applied: retry), Ambiguous (the reply was lost: it may have been applied), Timeout (the
    deadline passed: it may still be applied), Fenced or KeyReused (the key was first used
        with other arguments)."""
    if not 0 <= fence < 1 << 64:
        raise ValueError("chaoskit: call: fence must be a uint64, not %r" % (fence,))
    return ({"op": "call", "tool": tool, "args": args, "key": key or None, "ref": ref or None,
             "fence": fence or None, "timeout_ms": _positive(timeout, "timeout")},
            lambda r: Reply(id=r.get("reply_id", ""), replayed=r.get("replayed", False), topic=r.get("topic", "")))


def _lookup(tool, ref, timeout=None):
    """Asks the tool for the effect applied with the reference ref (see call): its Reply, or
    None if there is none. It is read-only, and outlives the tool's memory of keys; it can
    fail as a call does (Transient, Ambiguous, Timeout)."""
    return ({"op": "lookup", "tool": tool, "ref": ref, "timeout_ms": _positive(timeout, "timeout")},
            lambda r: Reply(id=r.get("reply_id", "")) if r.get("found") else None)


def _refuse(reason):
    """Records that the harness refuses to go on, not knowing what is safe (an effect it
    cannot tell was applied, and nothing to look it up by), with the reason a person should
    read. Exit after it: the run ends there, and passes as refused. It is not a beat."""
    return {"op": "refuse", "reason": reason}, _nothing


def _model(purpose, reply, latency=0, timeout=None):
    """Calls the scripted model and returns its text.

    purpose names the logical call ("plan step 3"), reply is what the model answers, latency
    (seconds) how long the answer takes, timeout (seconds), if given, the call's deadline.
    Raises RateLimited (see .retry_after), ModelServer, ContextLength or Deadline."""
    return ({"op": "model", "purpose": purpose, "reply": reply, "latency_ms": _ms(latency, "latency") or None,
             "timeout_ms": _positive(timeout, "timeout")}, lambda r: r.get("text", ""))


def _now():
    """Returns the virtual time, an aware UTC datetime. It is not a beat."""
    return {"op": "now"}, lambda r: _from_ms(r.get("now_ms", 0))


def _sleep(seconds):
    """Waits that many seconds of virtual time."""
    return {"op": "sleep", "ms": _ms(seconds, "sleep") or None}, _nothing


def _await(topic, timeout=None):
    """Waits until a message is posted on topic, and returns all of the topic's messages.

    timeout (seconds), if given, is a virtual deadline: Deadline is raised when it passes."""
    return {"op": "await", "topic": topic, "timeout_ms": _positive(timeout, "timeout")}, _messages


def _messages_of(topic):
    """Returns the messages posted on topic so far, without waiting. It is not a beat."""
    return {"op": "messages", "topic": topic}, _messages


def _acquire(name, ttl):
    """Takes the named lease for ttl seconds, unless another worker holds it (LeaseHeld)."""
    return {"op": "acquire", "name": name, "ttl_ms": _ms(ttl, "ttl")}, _lease


def _renew(lease, ttl):
    """Extends a lease by ttl seconds from now, unless it was lost (LeaseLost)."""
    return {"op": "renew", "lease": lease._wire(), "ttl_ms": _ms(ttl, "ttl")}, _lease


def _release(lease):
    """Gives a lease up."""
    return {"op": "release", "lease": lease._wire()}, _nothing


def _mark(label):
    """Declares progress: call it right after a step became durable, with a label unique
    to the step. chaoskit measures the work a crash loses from these marks."""
    return {"op": "mark", "label": label}, _nothing


def _random():
    """Returns an integer in [0, 2**64) from the process's seeded source: use it instead of
    your own randomness, so that runs repeat. It is not a beat."""
    return {"op": "random"}, lambda r: r.get("value", 0)


def _done(result):
    """Sends the run's result (any JSON value), which chaoskit compares with the golden
    run's. Exit with status 0 after it."""
    return {"op": "done", "result": result}, _nothing


def _nothing(r):
    return None


_PLANS = {"call": _call, "lookup": _lookup, "refuse": _refuse, "model": _model, "now": _now,
          "sleep": _sleep, "await_": _await, "messages": _messages_of, "acquire": _acquire,
          "renew": _renew, "release": _release, "mark": _mark, "random": _random, "done": _done}


def _blocking(plan):
    def method(self, *args, **kwargs):
        req, result = plan(*args, **kwargs)
        return result(self._do(req))
    method.__doc__ = plan.__doc__
    return method


def _coroutine(plan):
    async def method(self, *args, **kwargs):
        req, result = plan(*args, **kwargs)
        return result(await self._do(req))
    method.__doc__ = plan.__doc__
    return method


def _encode(req, n):
    """The request's line on the wire, with id n."""
    req = {k: v for k, v in req.items() if v is not None or k in ("args", "result")}
    req["id"] = n
    line = json.dumps(req, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    if len(line) > MAX_LINE:
        raise ValueError("chaoskit: %s: the request is longer than %d bytes" % (req["op"], MAX_LINE))
    return line


def _decode(op, n, r):
    """The response r (decoded, or an exception) to request n, or the error it carries."""
    if isinstance(r, BaseException):
        raise r
    if not r.get("ok"):
        err = r.get("error") or {}
        if not err:
            raise BadRequest("%s: refused without a reason" % op)
        raise error_for(err.get("code"), err.get("message", ""), err.get("retry_after_ms", 0))
    return r


def _parse(answer):
    """Decodes one response line: (its id, the response), or raises ProtocolError."""
    if len(answer) > MAX_LINE:
        raise ProtocolError("a response longer than %d bytes" % MAX_LINE)
    if not answer.endswith(b"\n"):
        raise ProtocolError("no response (the connection closed)")
    try:
        r = json.loads(answer)
    except ValueError as e:
        raise ProtocolError("malformed response: %s" % e) from e
    if not isinstance(r, dict):
        raise ProtocolError("malformed response: %.80r" % answer)
    return r.get("id") or 0, r


class _Base:
    """What Client and AsyncClient share: the hello's fields and the responses in flight."""

    def _hello(self, r):
        self.process = r.get("process", r.get("attempt", 0))
        self.attempt = self.process
        self.worker = r.get("worker", 0)
        self.state_dir = r.get("state_dir", "")

    def _route(self, rid, r, waiting):
        """Files response r (id rid) for the request waiting for it; waiting are the ids in
        flight. A response with no id answers the one request in flight; any other breaks the
        connection."""
        if rid in waiting:
            self._answers[rid] = r
        elif rid == 0 and len(waiting) == 1:
            self._answers[next(iter(waiting))] = r
        elif len(waiting) == 1:
            self._break(ProtocolError("response %r to request %d" % (rid, next(iter(waiting)))))
        else:
            self._break(ProtocolError("a response (id %r) to no request in flight" % (rid,)))

    def _break(self, err):
        if self._broken is None:
            self._broken = err


class Client(_Base):
    """A connection to chaoskit; make one with connect(). Threads may share it: their requests
    are in flight together.

    process numbers the process (0 for the first, one more per process started), worker is the
    worker it belongs to, and state_dir the directory to keep durable state in: everything
    written elsewhere is lost with the process. attempt is process under its earlier name."""

    def __init__(self, sock):
        """Wraps a connected socket; the hello is connect()'s job."""
        self.process = 0
        self.attempt = 0
        self.worker = 0
        self.state_dir = ""
        self._sock = sock
        self._in = sock.makefile("rb")
        self._send = threading.Lock()
        self._cond = threading.Condition()
        self._id = 0
        self._waiting = set()
        self._answers = {}
        self._reading = False
        self._broken = None

    def close(self):
        """Closes the connection."""
        self._in.close()
        self._sock.close()

    def __enter__(self):
        """Returns the client, for a with statement that closes it."""
        return self

    def __exit__(self, *exc):
        """Closes the connection."""
        self.close()

    def _do(self, req):
        """Sends one request and returns its response, raising the error it carries. The thread
        waiting reads the socket for every thread waiting, and hands each its response."""
        with self._send:
            line = _encode(req, self._id + 1)
            self._id += 1
            n = self._id
            with self._cond:
                if self._broken is not None:
                    raise self._broken
                self._waiting.add(n)
            try:
                self._sock.sendall(line)
            except OSError as e:
                with self._cond:
                    self._waiting.discard(n)
                raise ProtocolError("%s: %s" % (req["op"], e)) from e
        with self._cond:
            try:
                while n not in self._answers and self._broken is None:
                    if self._reading:
                        self._cond.wait()
                        continue
                    self._reading = True
                    self._cond.release()
                    try:
                        answer = self._in.readline(MAX_LINE + 1)
                        rid, r = _parse(answer)
                    except ProtocolError as e:
                        rid, r = None, e
                    except (OSError, ValueError) as e:
                        rid, r = None, ProtocolError("%s: %s" % (req["op"], e))
                    finally:
                        self._cond.acquire()
                        self._reading = False
                    if rid is None:
                        self._break(ProtocolError("%s: %s" % (req["op"], r.args[0])) if len(self._waiting) == 1 else r)
                    else:
                        self._route(rid, r, self._waiting)
                    self._cond.notify_all()
                r = self._answers.pop(n, None)
                if r is None:
                    raise self._broken
            finally:
                self._waiting.discard(n)
        return _decode(req["op"], n, r)


class AsyncClient(_Base):
    """A connection to chaoskit for asyncio; make one with connect_async(). Its methods are
    Client's, as coroutines: requests awaited together (asyncio.gather) are in flight
    together."""

    def __init__(self, reader, writer):
        """Wraps an open connection; the hello is connect_async()'s job."""
        self.process = 0
        self.attempt = 0
        self.worker = 0
        self.state_dir = ""
        self._reader = reader
        self._writer = writer
        self._id = 0
        self._waiting = {}
        self._answers = {}
        self._broken = None
        self._task = None

    def close(self):
        """Closes the connection."""
        if self._task is not None:
            self._task.cancel()
        self._writer.close()

    async def __aenter__(self):
        """Returns the client, for an async with statement that closes it."""
        return self

    async def __aexit__(self, *exc):
        """Closes the connection."""
        self.close()

    async def _do(self, req):
        """Sends one request and returns its response, raising the error it carries."""
        if self._broken is not None:
            raise self._broken
        line = _encode(req, self._id + 1)
        self._id += 1
        n = self._id
        fut = asyncio.get_running_loop().create_future()
        self._waiting[n] = fut
        if self._task is None:
            self._task = asyncio.ensure_future(self._read())
        try:
            self._writer.write(line)
            await self._writer.drain()
        except OSError as e:
            self._waiting.pop(n, None)
            raise ProtocolError("%s: %s" % (req["op"], e)) from e
        try:
            r = await fut
        finally:
            self._waiting.pop(n, None)
        if isinstance(r, ProtocolError) and len(r.args) and not r.args[0].startswith(req["op"]):
            r = ProtocolError("%s: %s" % (req["op"], r.args[0]))
        return _decode(req["op"], n, r)

    async def _read(self):
        """Reads responses and hands each to the request waiting for it, until the end."""
        while self._broken is None:
            try:
                answer = await self._reader.readline()
                rid, r = _parse(answer)
            except (ProtocolError, OSError, ValueError, asyncio.LimitOverrunError) as e:
                self._break(e if isinstance(e, ProtocolError) else ProtocolError(str(e)))
                break
            self._answers = {}
            self._route(rid, r, self._waiting)
            for k, v in self._answers.items():
                fut = self._waiting.get(k)
                if fut is not None and not fut.done():
                    fut.set_result(v)
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_result(self._broken)


for _name, _plan in _PLANS.items():
    setattr(Client, _name, _blocking(_plan))
    setattr(AsyncClient, _name, _coroutine(_plan))
    getattr(Client, _name).__name__ = _name
    getattr(AsyncClient, _name).__name__ = _name
del _name, _plan


def _positive(seconds, what):
    """A deadline on the wire: whole milliseconds, at most a year, or None when there is none
    (0 or None)."""
    ms = _ms(seconds, what, cap=True)
    return ms if ms else None


def _messages(r):
    return [Message(topic=m.get("topic", ""), body=m.get("body", ""), seq=m.get("seq", 0))
            for m in r.get("messages") or []]


def _lease(r):
    l = r.get("lease") or {}
    return Lease(name=l.get("name", ""), holder=l.get("holder", ""), token=l.get("token", 0),
                 expires_ms=l.get("expires_ms", 0))
