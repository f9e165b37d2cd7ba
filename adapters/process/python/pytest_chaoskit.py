"""pytest plugin: test a harness under chaoskit from pytest, a test per fault schedule.

A test asks for the `chaoskit` fixture and describes its campaign with check(), taking what
`chaoskit run --exec` takes:

    def test_orders_survive_crashes(chaoskit):
        chaoskit.check(["python3", "app.py"], tools={"create_po": "idempotent-by-key,latency=1s"},
                       state=["python3", "app.py", "--dump-state"], faults=["kill", "tool"])

Each case of the campaign is a test of its own, named for its schedule:
test_orders_survive_crashes[kill@3], ...[tool-timeout@4]. `pytest -k 'kill@3'` runs one,
`pytest -v` lists them, `-x` stops at the first failure and `--lf` runs the failed ones again. A
failing case prints the properties it broke, the beats around the fault, and two commands that
replay it: the pytest one and `chaoskit replay`. `--chaoskit-out DIR` (or CHAOSKIT_OUT) writes
each campaign's report directory, the one `chaoskit run` writes, to DIR/MODULE.TEST, for
`chaoskit gate`.

To list the cases, pytest runs the test's body at collection, with a stand-in `chaoskit` fixture
whose check() records the campaign and stops the body there: compute check()'s arguments from
nothing but the test's module (no other fixture), or declare the campaign with a marker, whose
test body runs after its case passed:

    @pytest.mark.chaoskit(["python3", "app.py"], tools={"create_po": "idempotent-by-key"})
    def test_orders_survive_crashes():
        pass

Options of check() and of the marker (each as `chaoskit run` spells it): tools (a dict of name
to contract and options, "idempotent-by-key,latency=1s", or a list of --tool values), http (the
REST doubles: a dict of "METHOD PATH" to contract, or a list of --http values), cassette (the
model's answers, a file relative to the test file's directory), state (the
command printing the durable state as JSON), upgrade and upgrade_state (the command of the next
version, which an upgrade fault deploys mid-run, and its state command: --upgrade-exec and
--upgrade-state), grace (how long the deploy lets the old version run after SIGTERM, "30s" by
default, "0" to kill at once: --grace), faults (a list or "kill,tool"), ignore (JSON paths),
disk ("plain" or "fuse"), beats, env (a dict or a list of KEY=VALUE), dir (the command's working
directory, relative to the test file's, which is the default), mode, cases, seed (default 1),
restart, name and parallel (cases at once; workers, its old name, is still taken). A command is a
list of words or one command line.

The plugin runs the `chaoskit` command (found on PATH, or given by --chaoskit-bin or
CHAOSKIT_BIN): `chaoskit run --list` at collection, then one `chaoskit run --stream` per campaign
for the cases selected, so the cases and verdicts are those of `chaoskit run` with the same
options. It is this one file (standard library and pytest): install it with
`pip install adapters/process/python` (an entry point loads it; no package index needed: see
README.md beside it), or copy it next to your conftest.py and add
`pytest_plugins = ["pytest_chaoskit"]` there.
"""

import inspect
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import tempfile
import time

import pytest

INSTALL = "go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest"
"""How to install the chaoskit command, for the error that says it is missing."""

STOP_WAIT = 60
"""Seconds a campaign stopped early (-x, Ctrl-C) has to finish the cases in flight."""


def pytest_addoption(parser):
    group = parser.getgroup("chaoskit", "chaoskit: chaos campaigns against a harness")
    group.addoption("--chaoskit-out", metavar="DIR", default=None,
                    help="write each campaign's report directory (report.json, summary.md, junit.xml, "
                         "report.html) to DIR/MODULE.TEST, for chaoskit gate (default: $CHAOSKIT_OUT)")
    group.addoption("--chaoskit-bin", metavar="PATH", default=None,
                    help="the chaoskit command (default: $CHAOSKIT_BIN, else chaoskit on PATH)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "chaoskit(argv, **options): run a chaoskit campaign over the command argv, a test per case "
                   "(options as chaoskit.check() takes them)")
    config._chaoskit = _Session(config)
    config._chaoskit_items = []


def pytest_unconfigure(config):
    s = getattr(config, "_chaoskit", None)
    if s is not None:
        s.close()


class _Planned(BaseException):
    """Raised by the stand-in fixture's check() at collection: the body stops there."""

    def __init__(self, spec):
        super().__init__("chaoskit: planned")
        self.spec = spec


class _Unavailable:
    """Stands in, at collection, for an argument of the test other than chaoskit."""

    def __init__(self, name):
        self._name = name

    def _fail(self, *args, **kwargs):
        raise RuntimeError("fixture %r only exists when the test runs" % object.__getattribute__(self, "_name"))

    __getattr__ = __call__ = __iter__ = __str__ = __fspath__ = __truediv__ = __rtruediv__ = _fail
    __getitem__ = __bool__ = __len__ = __add__ = __radd__ = __int__ = _fail


class _Planner:
    """The chaoskit fixture as the test's body sees it at collection."""

    def __init__(self, base_dir):
        self._base_dir = base_dir

    def check(self, argv, **options):
        raise _Planned(_spec(argv, options, self._base_dir))


def pytest_generate_tests(metafunc):
    spec = _spec_of(metafunc)
    if spec is None:
        return
    camp = metafunc.config._chaoskit.campaign(metafunc.definition.nodeid, spec)
    if camp.error is not None:
        cases, ids = [_Param(camp, None)], ["golden"]
    else:
        cases, ids = [_Param(camp, c) for c in camp.cases], [c["schedule"] for c in camp.cases]
        if camp.undecided:  # what chaoskit run would exit 3 for fails a test of its own
            cases, ids = cases + [_Param(camp, None, "\n".join(camp.undecided))], ids + ["undecided"]
    metafunc.parametrize("_chaoskit_case", cases, ids=ids, indirect=True)


def _spec_of(metafunc):
    """The campaign of a test: its marker's, or that of the check() its body calls; None for a
    test without one."""
    base = os.path.dirname(str(metafunc.definition.path))
    mark = metafunc.definition.get_closest_marker("chaoskit")
    if mark is not None:
        if not mark.args:
            raise pytest.UsageError("chaoskit: %s: @pytest.mark.chaoskit needs the command, as its first argument"
                                    % metafunc.definition.nodeid)
        return dict(_spec(mark.args[0], dict(mark.kwargs), base), form="marker")
    if "chaoskit" not in metafunc.fixturenames:
        return None
    fn = metafunc.function
    if inspect.iscoroutinefunction(fn):
        raise pytest.UsageError("chaoskit: %s is async: declare its campaign with @pytest.mark.chaoskit(...)"
                                % metafunc.definition.nodeid)
    params = list(inspect.signature(fn).parameters)
    args = {}
    for i, name in enumerate(params):
        if name == "chaoskit":
            args[name] = _Planner(base)
        elif i == 0 and metafunc.cls is not None:
            args[name] = metafunc.cls()
        else:
            args[name] = _Unavailable(name)
    try:
        fn(**args)
    except _Planned as p:
        return dict(p.spec, form="fixture")
    except Exception as e:
        raise pytest.UsageError(
            "chaoskit: %s: its body runs at collection, up to chaoskit.check(), to list the campaign's cases, "
            "and failed there: %s: %s. Compute check()'s arguments without other fixtures, or declare the "
            "campaign with @pytest.mark.chaoskit(...)" % (metafunc.definition.nodeid, type(e).__name__, e)) from e
    return None  # the body does not call check(): not a campaign


def _words(value, what):
    """A command as a list of words: from a list, or from one command line."""
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(w, (str, os.PathLike)) for w in value):
        return [os.fspath(w) for w in value]
    raise TypeError("chaoskit: %s must be a command: a list of words or a command line, not %r" % (what, value))


def _pairs(value, what, sep):
    """A dict as NAME<sep>VALUE strings, or a list of them as it is."""
    if isinstance(value, dict):
        return ["%s%s%s" % (k, sep, v) for k, v in value.items()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError("chaoskit: %s must be a dict or a list of strings, not %r" % (what, value))


OPTIONS = ("tools", "http", "cassette", "state", "upgrade", "upgrade_state", "grace", "faults", "ignore", "disk", "beats", "env", "dir", "mode",
           "cases", "seed", "restart", "name", "parallel", "workers")
"""What check() and the marker take besides the command."""


def _spec(argv, options, base_dir):
    """The campaign check(argv, **options) describes: the flags of chaoskit run, its seed, and
    its target's name."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError("chaoskit: check() got an unknown option %r (it takes %s)" % (unknown[0], ", ".join(OPTIONS)))
    words = _words(argv, "the command")
    flags = ["--exec", shlex.join(words)]
    if options.get("name"):
        flags += ["--name", str(options["name"])]
    for tool in _pairs(options.get("tools") or [], "tools", "="):
        flags += ["--tool", tool]
    for route in _pairs(options.get("http") or [], "http", "="):
        flags += ["--http", route]
    if options.get("cassette") is not None:
        flags += ["--cassette", os.path.normpath(os.path.join(base_dir, os.fspath(options["cassette"])))]
    if options.get("state") is not None:
        flags += ["--state", shlex.join(_words(options["state"], "state"))]
    # The next version an upgrade fault deploys, and its state command.
    for opt, flag in (("upgrade", "--upgrade-exec"), ("upgrade_state", "--upgrade-state")):
        if options.get(opt) is not None:
            flags += [flag, shlex.join(_words(options[opt], opt))]
    faults = options.get("faults")
    if faults is not None:
        flags += ["--faults", faults if isinstance(faults, str) else ",".join(faults)]
    for path in options.get("ignore") or []:
        flags += ["--ignore", path]
    for flag in ("grace", "disk", "beats", "mode", "restart"):
        if options.get(flag) is not None:
            flags += ["--" + flag, str(options[flag])]
    for flag in ("cases", "seed", "parallel", "workers"):
        if options.get(flag) is not None:
            flags += ["--" + ("parallel" if flag == "workers" else flag), str(int(options[flag]))]
    for var in _pairs(options.get("env") or [], "env", "="):
        flags += ["--env", var]
    flags += ["--dir", os.path.normpath(os.path.join(base_dir, os.fspath(options.get("dir") or ".")))]
    return {"flags": flags, "seed": int(options.get("seed") or 1)}


class _Param:
    """A test's parameter: its campaign and its case (None for a campaign that cannot be listed,
    or for the test that says what the campaign decides nothing about: undecided)."""

    def __init__(self, camp, case, undecided=None):
        self.camp, self.case, self.undecided = camp, case, undecided

    def __repr__(self):
        return self.case["schedule"] if self.case else "undecided" if self.undecided else "golden"


@pytest.fixture(autouse=True)
def _chaoskit_case(request):
    """The case a chaoskit test runs (its parameter), or None for any other test. It is autouse
    so that a marker's test need not ask for it."""
    return getattr(request, "param", None)


@pytest.fixture
def chaoskit(request, _chaoskit_case):
    """Runs a test's case of a chaoskit campaign: chaoskit.check(argv, **options), and
    chaoskit.case, the case as report.json holds it, once it ran."""
    return Chaoskit(request, _chaoskit_case)


class Chaoskit:
    """The chaoskit fixture: check() runs the test's case of the campaign it describes."""

    def __init__(self, request, param):
        self._request, self._param = request, param
        self.case = None
        """The test's case, as report.json holds it (a dict), once check() ran it."""

    def check(self, argv, **options):
        """Runs the test's case of the campaign over the command argv (see the module's doc) and
        fails the test, saying why, unless it passed. Returns the case as report.json holds it."""
        item = self._request.node
        if self._param is None:
            pytest.fail("chaoskit: %s calls chaoskit.check() only when it runs, not at collection, so it has "
                        "no case: make the call unconditional" % item.nodeid, pytrace=False)
        spec = _spec(argv, options, os.path.dirname(str(item.path)))
        if spec["flags"] != self._param.camp.spec["flags"]:
            pytest.fail("chaoskit: %s: check()'s arguments differ from those it was called with at collection: "
                        "they must not depend on the test's other fixtures or on the time" % item.nodeid, pytrace=False)
        self.case = _judge(item, self._param)
        return self.case


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs a marker test's case before its body, and fails a fixture test whose body did not
    call check() when it ran."""
    param = _param_of(pyfuncitem)
    if param is not None and param.camp.spec["form"] == "marker":
        case = _judge(pyfuncitem, param)
        fixture = pyfuncitem.funcargs.get("chaoskit")
        if isinstance(fixture, Chaoskit):
            fixture.case = case
    outcome = yield
    if param is not None and param.camp.spec["form"] == "fixture" and outcome.excinfo is None:
        fixture = pyfuncitem.funcargs.get("chaoskit")
        if not isinstance(fixture, Chaoskit) or fixture.case is None:
            pytest.fail("chaoskit: %s called chaoskit.check() at collection but not when it ran" % pyfuncitem.nodeid,
                        pytrace=False)


def _param_of(item):
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("_chaoskit_case") if callspec is not None else None
    return param if isinstance(param, _Param) else None


def _judge(item, param):
    """Runs the item's case (or waits for it) and fails the item unless it passed."""
    session = item.config._chaoskit
    camp = param.camp
    if param.undecided:
        pytest.fail(param.undecided + "\n  leave them out of faults= (chaoskit run exits 3 for this campaign)",
                    pytrace=False)
    if param.case is None:  # the campaign could not be listed: say why, and write its report if asked
        camp.finish_refused(session)
        pytest.fail(camp.error, pytrace=False)
    case = camp.result(session, param.case["id"])
    if case is None:
        _interrupted(camp.stopped, "chaoskit run")
        pytest.fail(camp.failure_of_run(), pytrace=False)
    if case.get("verdict") != "pass":
        pytest.fail(_render(case, camp.spec["seed"], _pytest_replay(item)), pytrace=False)
    return case


def _pytest_replay(item):
    """The pytest command that runs item again, from where pytest was started."""
    config = item.config
    here = str(config.invocation_params.dir)
    path = os.path.relpath(str(item.path), here)
    nodeid = path + item.nodeid[item.nodeid.index("::"):] if "::" in item.nodeid else path
    words = ["pytest"]
    args = list(config.invocation_params.args)
    for i, a in enumerate(args):  # a plugin loaded with -p is needed again
        if a == "-p" and i + 1 < len(args):
            words += ["-p", args[i + 1]]
        elif a.startswith("-p") and len(a) > 2:
            words.append(a)
    return " ".join(shlex.quote(w) for w in words + [nodeid])


def _render(case, seed, pytest_cmd):
    """A failing case as a person reads it: verdict, violations, the beats around the fault, and
    the commands that replay it."""
    head = "%s under %s (seed %d): %s" % (case.get("target"), case.get("schedule") or "no fault", seed,
                                          case.get("verdict"))
    if case.get("detected"):
        head += " (stopped loudly: %s)" % case["detected"].splitlines()[0]
    lines = [head]
    if case.get("reason"):
        lines.append("  " + _indent(case["reason"], "  "))
    for v in case.get("violations") or []:
        lines.append("  violated %s: %s" % (v.get("property"), _indent(v.get("detail", ""), "    ")))
    trace = case.get("trace") or []
    if trace:
        lines.append("  beats around the fault:" if any(b.get("fault") for b in trace) else "  beats (no fault fired):")
        last = -1
        for b in trace:
            if last >= 0 and b["beat"] > last + 1:
                lines.append("         ...")
            last = b["beat"]
            row = "  %s%5d  p%d  %s" % (">> " if b.get("fault") else "   ", b["beat"], b.get("process", b.get("attempt", 0)), b.get("label", ""))
            if b.get("fault"):
                row += "   <- " + b["fault"]
            if b.get("note"):
                row += "   [%s]" % b["note"]
            lines.append(row)
    diff = case.get("diff")
    if diff and not any(diff.strip() in (v.get("detail") or "") for v in case.get("violations") or []):
        lines.append("  diff (-golden +faulty):\n    " + _indent(diff.rstrip("\n"), "    "))
    repro = case.get("repro", "")
    shrunk = case.get("shrunk")
    if shrunk and shrunk != case.get("schedule"):
        lines.append("  shrunk to %s: %s" % (shrunk, _with_schedule(repro, shrunk)))
    lines.append("  replay: " + pytest_cmd)
    lines.append("      or: " + repro)
    return "\n".join(lines)


def _indent(text, prefix):
    return text.replace("\n", "\n" + prefix)


def _with_schedule(cmd, schedule):
    """The replay command cmd with its --schedule replaced."""
    return re.sub(r"--schedule ('[^']*'|\S+)\s*$", lambda m: "--schedule " + shlex.quote(schedule), cmd)


class _Session:
    """What the plugin keeps for a pytest session: the campaigns, by test."""

    def __init__(self, config):
        self.config = config
        self.campaigns = {}
        self.out = config.getoption("chaoskit_out") or os.environ.get("CHAOSKIT_OUT") or None
        self.bin_given = config.getoption("chaoskit_bin") or os.environ.get("CHAOSKIT_BIN") or None
        self._bin = None
        self.notes = []

    def binary(self):
        """The chaoskit command, or raises _Missing."""
        if self._bin is None:
            found = shutil.which(self.bin_given or "chaoskit")
            if found is None:
                if self.bin_given:
                    raise _Missing("chaoskit: %s (--chaoskit-bin or CHAOSKIT_BIN) is not a command; install chaoskit "
                                   "with %s" % (self.bin_given, INSTALL))
                raise _Missing("chaoskit: the chaoskit command is not on PATH; install it with %s (or give "
                               "--chaoskit-bin PATH)" % INSTALL)
            self._bin = found
        return self._bin

    def campaign(self, test, spec):
        """The campaign of a test, listed."""
        if test not in self.campaigns:
            self.campaigns[test] = _Campaign(self, test, spec)
        return self.campaigns[test]

    def report_dir(self, test):
        """Where the report directory of a test's campaign goes, or None if none is asked."""
        if not self.out:
            return None
        path, _, rest = test.partition("::")
        stem = os.path.splitext(os.path.basename(path))[0]
        name = ".".join([stem] + [p for p in rest.split("::") if p])
        return os.path.join(self.out, re.sub(r"[^\w.@+-]", "_", name))

    def close(self):
        for camp in self.campaigns.values():
            camp.close()


SIGNALS = {130: "SIGINT", 143: "SIGTERM"}
"""chaoskit's exit codes when a signal stopped it, and the signals."""


def _interrupted(code, what):
    """Stops the session as pytest stops on Ctrl-C when chaoskit was stopped by a signal (exit
    130 or 143): the signal was meant for the session too, which did not get it (pytest runs with
    SIGINT ignored, as a shell's background job does, or the signal went to chaoskit alone)."""
    if code in SIGNALS:
        raise KeyboardInterrupt("%s was stopped by %s" % (what, SIGNALS[code]))


class _Missing(Exception):
    """The chaoskit command cannot be found."""


class _Campaign:
    """A test's campaign: listed at collection, then run in batches of the cases selected."""

    def __init__(self, session, test, spec):
        self.session, self.test, self.spec = session, test, spec
        self.cases, self.error = [], None
        self.undecided = []  # what chaoskit run --list said nothing will be decided about
        self.results = {}  # case ID -> the case, as --stream printed it
        self.batch = None  # the chaoskit run under way, if any
        self.failures = []  # why batches ended without all their cases
        self.reported = False  # the report directory was written
        self.stopped = None  # the exit code of a batch a signal stopped (130, 143), if one did
        try:
            out = subprocess.run([session.binary(), "run", "--list"] + spec["flags"], capture_output=True, text=True)
        except (_Missing, OSError) as e:
            self.error = str(e)
            return
        _interrupted(out.returncode, "chaoskit run --list")
        if out.returncode != 0:
            msg = out.stderr.strip() or "chaoskit run --list exited %d" % out.returncode
            self.error = "%s\n  the same from the command line: chaoskit run %s" % (
                msg, " ".join(shlex.quote(f) for f in spec["flags"]))
            return
        self.cases = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        self.undecided = [line for line in out.stderr.splitlines() if line.startswith("chaoskit: nothing will be decided")]

    def result(self, session, case_id):
        """The case with that ID, run in a batch of the cases selected; None if no batch could run it."""
        while case_id not in self.results:
            if self.stopped:
                return None  # no other batch: the session is to stop
            if self.batch is None:
                todo = self._todo(session, case_id)
                if case_id not in todo:
                    return None  # a batch already tried it
                self.batch = _Batch(self, todo, session.report_dir(self.test) if not self.reported else None)
            c = self.batch.next()
            if c is None:
                self._end_batch()
            else:
                self.results[c["id"]] = c
        return self.results[case_id]

    def _todo(self, session, first):
        """The cases of this campaign that pytest will run and that have no result yet, in the order
        of the campaign, first included: a batch's --only."""
        selected = {first}
        for item in session.config._chaoskit_items:
            p = _param_of(item)
            if p is not None and p.camp is self and p.case is not None:
                selected.add(p.case["id"])
        tried = {i for b in self.failures for i in b[1]}
        return [c["id"] for c in self.cases if c["id"] in selected and c["id"] not in self.results
                and c["id"] not in tried]

    def _end_batch(self):
        b, self.batch = self.batch, None
        code, errs = b.wait()
        if b.report_dir and code in (0, 1, 3):
            self.reported = True
            self.session.notes.append("chaoskit: %s: wrote the report directory %s" % (self.test, b.report_dir))
        missing = [i for i in b.only if i not in self.results]
        if code in SIGNALS:
            # Stopped by a signal, as pytest would have been had it not ignored it: the cases
            # not run are not failures, and the temporary directory that held the journal is gone.
            self.stopped = code
            if b.report_dir:
                self.session.notes.append("chaoskit: %s: chaoskit run was stopped by %s: no report written to %s"
                                          % (self.test, SIGNALS[code], b.report_dir))
        elif missing:
            self.failures.append(("chaoskit run exited %d before it ran every case: %s" % (code, errs.strip()), missing))

    def failure_of_run(self):
        return self.failures[-1][0] if self.failures else "chaoskit: the case was not run"

    def finish_refused(self, session):
        """For a campaign that could not be listed, runs it when a report directory is asked, so
        that the directory holds the refusal (chaoskit run writes it for a target that is not
        deterministic)."""
        out = session.report_dir(self.test)
        if out and not self.reported and self.batch is None:
            try:
                session.binary()
            except _Missing:
                return
            self.batch = _Batch(self, [], out)
            while self.batch.next() is not None:
                pass
            self.reported = True
            self._end_batch()

    def close(self):
        """Ends the batch under way, if any: lets it write its report if every case it runs was
        read, else stops it, since the session ended before it did (-x, Ctrl-C)."""
        if self.batch is not None and all(i in self.results for i in self.batch.only):
            while self.batch.next() is not None:
                pass
            self._end_batch()
        if self.batch is not None:
            b, self.batch = self.batch, None
            b.stop()
            if b.report_dir:
                self.session.notes.append("chaoskit: %s: the session stopped before its campaign ran: no report "
                                          "written to %s" % (self.test, b.report_dir))


class _Batch:
    """One chaoskit run --stream of some of a campaign's cases (all of them when only is all)."""

    def __init__(self, camp, only, report_dir):
        self.only, self.report_dir = only, report_dir
        self.tmp = None
        if report_dir is None:
            self.tmp = tempfile.mkdtemp(prefix="chaoskit-pytest-")
            out, formats = self.tmp, "json"
        else:
            os.makedirs(os.path.dirname(os.path.abspath(report_dir)), exist_ok=True)
            out, formats = report_dir, "json,md,junit,html"
        args = [camp.session.binary(), "run"] + camp.spec["flags"] + ["--stream", "--out", out, "--format", formats]
        if only and len(only) < len(camp.cases):
            for case_id in only:
                args += ["--only", case_id]
        self.errs = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.errs, text=True)

    def next(self):
        """The next case the run finished, or None at its end."""
        line = self.proc.stdout.readline()
        while line and not line.strip():
            line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def wait(self):
        """Waits for the run to end; returns its exit code and its standard error."""
        code = self.proc.wait()
        self.proc.stdout.close()
        self.errs.seek(0)
        errs = self.errs.read()
        self.errs.close()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return code, errs

    def stop(self):
        """Stops the run between cases (SIGTERM), draining what it still prints, and kills it if
        it takes longer than STOP_WAIT."""
        if self.proc.poll() is None:
            self.proc.terminate()
            deadline = time.monotonic() + STOP_WAIT
            fd = self.proc.stdout.fileno()
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], max(0, deadline - time.monotonic()))
                if ready and not os.read(fd, 1 << 16):
                    break
            if self.proc.poll() is None:
                try:
                    self.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    self.proc.kill()
        self.wait()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Selects by -k itself when the expression names a schedule (kill@3, kill@4,kill@9), which
    pytest's -k cannot parse; else leaves -k to pytest."""
    expr = config.option.keyword.strip()
    if not expr or re.fullmatch(r"[\w:+\-.\[\]\\/()\s]*", expr):
        return
    try:
        match = _Expression(expr).compile()
    except ValueError as e:
        raise pytest.UsageError("Wrong expression passed to '-k': %s: %s" % (expr, e))
    keep, drop = [], []
    for item in items:
        (keep if match(_keywords(item)) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    config.option.keyword = ""  # done: pytest's own -k would refuse the expression


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Remembers the items pytest will run, in order: a batch runs the cases among them."""
    session.config._chaoskit_items = list(session.items)


def _keywords(item):
    """The names -k matches an item against, as pytest's own -k does."""
    names = {node.name for node in item.listchain() if not isinstance(node, pytest.Session)}
    names.update(item.listextrakeywords())
    fn = getattr(item, "function", None)
    if fn is not None:
        names.update(fn.__dict__)
    names.update(m.name for m in item.iter_markers())
    return [n.lower() for n in names]


class _Expression:
    """-k's grammar (or, and, not, parentheses) over words that may hold any character but
    spaces and parentheses; a word matches a name it is a substring of, case aside."""

    def __init__(self, text):
        self.tokens = re.findall(r"\(|\)|[^\s()]+", text)
        self.at = 0

    def compile(self):
        fn = self._or()
        if self.at != len(self.tokens):
            raise ValueError("unexpected %r" % self.tokens[self.at])
        return fn

    def _peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self):
        tok = self._peek()
        if tok is None:
            raise ValueError("the expression ends too soon")
        self.at += 1
        return tok

    def _or(self):
        return self._chain("or", self._and, any)

    def _and(self):
        return self._chain("and", self._not, all)

    def _chain(self, word, operand, combine):
        """operand, or operands joined by word, their values combined (any for or, all for and)."""
        terms = [operand()]
        while self._peek() == word:
            self.at += 1
            terms.append(operand())
        return terms[0] if len(terms) == 1 else lambda names: combine(t(names) for t in terms)

    def _not(self):
        tok = self._take()
        if tok == "not":
            inner = self._not()
            return lambda names: not inner(names)
        if tok == "(":
            inner = self._or()
            if self._take() != ")":
                raise ValueError("a parenthesis is not closed")
            return inner
        if tok in (")", "and", "or"):
            raise ValueError("unexpected %r" % tok)
        word = tok.lower()
        return lambda names: any(word in n for n in names)


def pytest_terminal_summary(terminalreporter):
    s = getattr(terminalreporter.config, "_chaoskit", None)
    if s is None:
        return
    s.close()  # a batch stopped early says so
    for note in s.notes:
        terminalreporter.write_line(note)
