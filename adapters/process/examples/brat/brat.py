"""A brat-style task log under chaoskit: an append-only event log on git refs, a view derived
from it, and a TTL lease on the task.

As in brat (on Gritee), every change of the harness's state is an event appended to a log in a
git repository: a blob holding the event's JSON, in a tree, in a commit whose parent is the
previous head of refs/brat/wal, which `git update-ref` moves from the old head to the new one
(so an append that lost a race fails rather than overwriting). The log is the source of truth;
view.json, beside the repository in CHAOSKIT_STATE_DIR, is a cache of what it says, written
after each append. The harness takes the task's lease (chaoskit's lease service, with a TTL),
records task.created, then the session's events in order: session.requested before it spawns
the agent session (the tool spawn_session, a side effect chaoskit counts, keyed by the
session), session.started once the tool answered with the agent's id, session.heartbeat
(renewing the lease) and session.completed.

On start it rebuilds the view from the log, so a crash between an append and the view's write
is caught up. With --broken it trusts view.json when there is one: after a kill between the
ref update and the view write it redoes the step the view has not seen, writing an event twice,
or requesting a second session and spawning its agent in place of the first's. Git's commit
dates come from chaoskit's virtual clock and its identity is fixed, so the object ids of a run
are the same every time it runs.

    chaoskit run --exec 'python3 brat.py' --tool spawn_session=idempotent-by-key,latency=1s,fenced \\
        --state 'python3 brat.py --dump-state' --ignore '$.events[*].ts' --ignore '$.view.head' \\
        --faults kill
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import chaoskit  # noqa: E402  (one file: copy it next to your harness instead, if you like)

WAL = "refs/brat/wal"
"""The ref whose history is the event log."""

NO_REF = "0" * 40
"""update-ref's old value for "the ref must not exist yet"."""

TASK = "t1"
"""The task the harness works on: one agent session for it."""

LEASE_TTL = 120
"""The lease's time to live, in seconds: longer than a step takes, retries included."""

TRIES = 5
"""How many times a call whose outcome is unknown is made before the step gives up."""

IDENTITY = {"GIT_AUTHOR_NAME": "brat", "GIT_AUTHOR_EMAIL": "brat@localhost",
            "GIT_COMMITTER_NAME": "brat", "GIT_COMMITTER_EMAIL": "brat@localhost"}


def canonical(value):
    """JSON with sorted keys and no spaces: the same value always prints the same."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Log:
    """The event log: the history of WAL in the bare repository at path."""

    def __init__(self, path, fsync="committed", trust_git=False):
        self.path, self.fsync, self.trust_git = path, fsync, trust_git
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(IDENTITY, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)

    def git(self, *args, stdin=None, check=True):
        """Runs git on the repository; returns its standard output, stripped (or, with
        check=False, the completed process, whatever its status)."""
        p = subprocess.run(("git", "--git-dir", self.path) + args, input=stdin, env=self.env,
                           capture_output=True, text=True)
        if not check:
            return p
        if p.returncode != 0:
            raise SystemExit("brat: git %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.stdout.strip()

    def exists(self):
        """Whether the repository has been made."""
        return os.path.exists(os.path.join(self.path, "HEAD"))

    def init(self):
        """Makes the repository, once and durably: made aside, all of it fsynced, then renamed
        into place, so that a crash leaves a whole repository or none. (Later, git fsyncs the
        objects and refs it writes as core.fsync says, except the trees mktree writes, and
        never the directories it puts them in.)"""
        if self.exists():
            return
        aside = Log(self.path + ".new", self.fsync)
        shutil.rmtree(aside.path, ignore_errors=True)
        aside.git("-c", "init.defaultBranch=main", "init", "-q", "--bare")
        config = [("gc.auto", "0"), ("user.name", IDENTITY["GIT_AUTHOR_NAME"]), ("user.email", IDENTITY["GIT_AUTHOR_EMAIL"])]
        if self.fsync != "default":
            config += [("core.fsync", self.fsync), ("core.fsyncMethod", "fsync")]
        for key, value in config:
            aside.git("config", key, value)
        for top, _, files in os.walk(aside.path, topdown=False):
            for name in files:
                fsync_file(os.path.join(top, name))
            fsync_dir(top)
        os.rename(aside.path, self.path)
        fsync_dir(os.path.dirname(self.path))

    def head(self):
        """The commit WAL points at and its event's position in the log (from 0), or
        (None, -1) before the first event. One git command: the position leads the subject."""
        p = self.git("log", "-1", "--format=%H %s", WAL, "--", check=False)
        if p.returncode != 0 or not p.stdout.strip():
            return None, -1
        commit, seq = p.stdout.split()[:2]
        return commit, int(seq)

    def entries(self):
        """Every event of the log with its commit, oldest first: [(commit, event)]."""
        commits = self.git("rev-list", "--reverse", "--ignore-missing", WAL).split()
        if not commits:
            return []
        out = self.git("cat-file", "--batch", stdin="".join(c + ":event.json\n" for c in commits)) + "\n"
        events = []  # canonical JSON is ASCII, so the sizes git gives in bytes count characters
        while out:
            header, out = out.split("\n", 1)  # "<blob> blob <size>", then the blob and a newline
            size = int(header.split()[2])
            events.append(json.loads(out[:size]))
            out = out[size + 1:]
        return list(zip(commits, events))

    def append(self, event, now, parent):
        """Appends an event dated now (a datetime) after parent, the head it was decided on: a
        blob, a tree and a commit on parent, made durable, then update-ref from parent to the
        commit, so an append that lost a race fails. Returns the commit."""
        blob = self.git("hash-object", "-w", "--stdin", stdin=canonical(event))
        tree = self.git("mktree", stdin="100644 blob %s\tevent.json\n" % blob)
        date = "%d +0000" % now.timestamp()
        self.env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
        message = "%d %s %s" % (event["seq"], event["type"], event.get("session", event["task"]))
        commit = self.git("commit-tree", tree, "-m", message, *(("-p", parent) if parent else ()))
        if not self.trust_git:
            self.sync_objects(blob, tree, commit)
        self.git("update-ref", "-m", message, WAL, commit, parent or NO_REF)
        if not self.trust_git:
            for d in (os.path.dirname(WAL), "refs"):  # the ref's rename into place, a new refs/brat
                fsync_dir(os.path.join(self.path, d))
        return commit

    def sync_objects(self, *oids):
        """Makes loose objects durable before a ref names them. Git's core.fsync covers
        hash-object, commit-tree and update-ref, but mktree never reads its configuration
        (builtin/mktree.c, git 2.39.5 to master), so its tree is written without an fsync
        whatever core.fsync says: under chaoskit's ext4 model a power cut leaves it empty
        (docs/findings/git-mktree-ignores-core-fsync.md). And no git command fsyncs the
        directories it puts objects in."""
        objects = os.path.join(self.path, "objects")
        for oid in oids:
            fsync_file(os.path.join(objects, oid[:2], oid[2:]))
        for d in sorted({oid[:2] for oid in oids}):
            fsync_dir(os.path.join(objects, d))
        fsync_dir(objects)


def fold(view, event, head):
    """The view after one more event: the task's status and its current session."""
    kind, view = event["type"], dict(view, events=view["events"] + 1, head=head, last=event["type"])
    if kind == "task.created":
        view.update(task=event["task"], status="queued")
    elif kind == "session.requested":
        view.update(status="running", session=event["session"])
    elif kind == "session.started":
        view.update(agent=event["agent"])
    elif kind == "session.heartbeat":
        view.update(cursor=event["cursor"])
    elif kind == "session.completed":
        view.update(status="done", exit_code=event["exit_code"])
    return view


EMPTY_VIEW = {"events": 0, "head": None, "last": None, "status": "new"}


def rebuild(entries):
    """The view derived from the log's entries: what every start does, unless --broken."""
    view = EMPTY_VIEW
    for commit, event in entries:
        view = fold(view, event, commit)
    return view


def save_view(path, view):
    """Writes the view: a temporary file, fsynced, renamed over the old one, directory fsynced."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(canonical(view))
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)
    fsync_dir(os.path.dirname(path))


def fsync_dir(path):
    """Makes the entries of a directory durable: the files created, renamed or removed in it."""
    fsync_file(path)


def fsync_file(path):
    """Makes what was written to a file (or a directory's entries) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def spawn(ck, session, fence):
    """Spawns the agent session, keyed by the session: a retry after an unknown outcome, or a
    restart that reissues a requested session, does not spawn a second agent."""
    for attempt in range(TRIES):
        try:
            args = {"task": TASK, "session": session, "prompt": "fix the TODOs"}
            return ck.call("spawn_session", args, key=session, fence=fence, timeout=30)
        except chaoskit.RETRY_WITH_SAME_KEY:
            ck.sleep(2 ** attempt)
    raise SystemExit("brat: spawn_session failed %d times" % TRIES)


class Harness:
    """One process of the harness: the log and where its head is, the view, the lease."""

    def __init__(self, ck, broken, fsync="committed", trust_git=False):
        self.ck = ck
        self.log = Log(os.path.join(ck.state_dir, "brat.git"), fsync, trust_git)
        self.view_path = os.path.join(ck.state_dir, "view.json")
        self.log.init()
        if broken and os.path.exists(self.view_path):
            with open(self.view_path) as f:
                self.view = json.load(f)  # the bug: trusted as it is
            self.head, self.seq = self.log.head()
        else:
            entries = self.log.entries()
            self.view = rebuild(entries)
            save_view(self.view_path, self.view)
            self.head, self.seq = (entries[-1][0], entries[-1][1]["seq"]) if entries else (None, -1)

    def record(self, kind, **fields):
        """Appends an event at the log's head, marks it as durable progress, then brings the
        view up to date. A session is named by the position its request takes in the log."""
        seq = self.seq + 1
        if kind == "session.requested":
            fields["session"] = "%s/%d" % (TASK, seq)
        now = self.ck.now()
        event = dict(fields, type=kind, task=TASK, seq=seq, ts=int(now.timestamp() * 1000))
        self.head, self.seq = self.log.append(event, now, self.head), seq
        self.ck.mark("%s %s" % (kind, event.get("session", TASK)))
        self.view = fold(self.view, event, self.head)
        save_view(self.view_path, self.view)

    def run(self):
        """Takes the task from where the view says it is to done; returns the view."""
        if self.view["status"] == "done":
            return self.view
        lease = self.ck.acquire("task/" + TASK, ttl=LEASE_TTL)
        while self.view["status"] != "done":
            last, session = self.view["last"], self.view.get("session")
            if last is None:
                self.record("task.created", title="list the TODO comments and file tasks")
            elif last == "task.created":
                self.record("session.requested")
            elif last == "session.requested":
                agent = spawn(self.ck, session, lease.token)
                self.record("session.started", session=session, agent=agent.id)
            elif last == "session.started":
                try:
                    lease = self.ck.renew(lease, ttl=LEASE_TTL)
                except chaoskit.LeaseLost:
                    raise SystemExit("brat: the lease on %s was lost: another worker has it" % TASK)
                self.record("session.heartbeat", session=session, cursor=1)
            elif last == "session.heartbeat":
                self.record("session.completed", session=session, exit_code=0)
        self.ck.release(lease)
        return self.view


def dump_state(state_dir):
    """Prints the log's events and the view as canonical JSON."""
    log = Log(os.path.join(state_dir, "brat.git"))
    events = [event for _, event in log.entries()] if log.exists() else []
    view = None
    path = os.path.join(state_dir, "view.json")
    if os.path.exists(path):
        with open(path) as f:
            view = json.load(f)
    print(canonical({"events": events, "view": view}))


def main():
    """Parses the flags; runs the harness under chaoskit, or dumps its state."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--broken", action="store_true", help="trust view.json on start instead of rebuilding it")
    p.add_argument("--dump-state", action="store_true", help="print the durable state as JSON and exit")
    p.add_argument("--git-fsync", default="committed", choices=("committed", "all", "default"),
                   help="git's core.fsync for the log's repository: committed (the default), all, or default (left unset: git's own default, which fsyncs no loose object)")
    p.add_argument("--trust-git", action="store_true",
                   help="leave durability to git: no fsync of the objects and directories of our own (git fsyncs what core.fsync says, mktree's trees excepted, and no directory)")
    flags = p.parse_args()
    if flags.dump_state:
        dump_state(os.environ.get("CHAOSKIT_STATE_DIR", "."))
        return
    try:
        ck = chaoskit.connect()
    except chaoskit.NotUnderChaoskit as e:
        sys.exit("%s\nrun it with chaoskit run --exec 'python3 brat.py' (see PROTOCOL.md)" % e)
    with ck:
        view = Harness(ck, flags.broken, flags.git_fsync, flags.trust_git).run()
        ck.done({"task": TASK, "status": view["status"], "agent": view.get("agent"), "events": view["events"]})


if __name__ == "__main__":
    main()
