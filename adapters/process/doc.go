// Package process runs any command as a chaoskit target: a harness in Python, JavaScript, Go
// or a shell script driving git, tested by the same oracle as an in-process Go target.
//
// A Target is a command line. For every process of the harness, chaoskit starts the command
// with its state directory, a Unix socket and a per-process token in its environment; the
// command talks to chaoskit's world through a client of the protocol (PROTOCOL.md: the Go
// client in package client, python/chaoskit.py, js/chaoskit.mjs), each request the Env call
// it stands for and a beat where that call is one. A crash at a beat SIGKILLs the command with
// every process it started, and the next process starts on whatever the state directory holds.
//
//	process.Init() // first thing in main, or in TestMain
//	rn, err := sim.NewRunner(harness.Fresh(process.Target{
//		Argv:      []string{"python3", "app.py"},
//		ToolList:  []harness.Tool{{Name: "create_po", Contract: harness.IdempotentByKey}},
//		StateArgv: []string{"python3", "app.py", "--dump-state"},
//		Disk:      process.FUSE,
//	}), sim.Options{Name: "burr"})
//
// # One process, four concerns
//
// A process of a Target (proc.go) brings together, on the goroutine that runs it in the
// simulation (the serve loop), four things that are kept apart:
//
//   - the command (child.go, descendants.go): started in a process group and, where this
//     machine has a writable cgroup v2 hierarchy, a cgroup of its own, so that a SIGKILL reaches
//     every process it started, also one that left the group (setsid, a daemon's double fork);
//     without cgroups its processes are found by the token in their environment;
//   - the protocol session (session.go, protocol.go): the socket, the connections (several, each
//     with its hello), and the requests (pipelined, answered by id), each submitted for
//     admission;
//   - admission (admit.go, owed.go, frontdoor.go): requests held until the command is
//     quiescent, admitted in canonical order (Key), each run in a thread of the process, their
//     replies handed back one at a time; what chaoskit owes the command (a ledger of bytes
//     unread, connections not accepted, readers busy); Admit and FrontDoor, the same for the
//     HTTP front doors;
//   - the watcher (watch.go, quiesce.go, seccomp.go, tracer.go): one seccomp trap per command
//     (sync and syncfs on a FUSE disk; with virtual time, every clock read and timed wait), the
//     tracer that runs the command with its vDSO removed, and the scans that find it
//     quiescent;
//   - the disk bridge (bridge.go, copy.go): the state directory is either a FUSE mount of
//     chaoskit's fault disk (package fusefs), every mutating file operation a beat, or a real
//     directory holding a copy of the disk (plain), copied back before each beat and at the
//     end, so that the disk holds at every beat what a kill there leaves.
//
// # What a case costs
//
// A crash case does not re-run the golden prefix: the disk, the world and the clock at the
// crash beat are derived from the golden recording (sim.Runner), and only the recovery
// process runs. The state command (Target.StateArgv) runs once per distinct disk: the digest of
// what it printed is kept by the digest of the files it was shown, and the documents themselves
// within a budget, the golden run's for good, so that memory does not grow with the cases
// whatever the state's size (state.go). So a kill or power case costs about one bare run of the
// command; chaoskit bench --exec measures it.
//
// # Helpers
//
// chaoskit runs three helpers, copies of the running program that Init recognises (helper.go):
// the tracer (tracer.go), parent of each command run with virtual time;
// the reaper (reaper.go), which cleans up after chaoskit however it dies, killing the commands
// and helpers it recorded, removing their cgroups, detaching mounts and removing chaoskit's
// directory; and the FUSE helper, which serves every FUSE disk and forwards each request to
// chaoskit, so that the kernel never waits on chaoskit itself: if chaoskit dies, the helper
// fails what is left, unmounts and exits.
package process
