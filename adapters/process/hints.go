package process

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chaoskit/chaoskit/sim"
)

// The words of a process target's messages, by the language its command runs (sim.Hinter):
// what a hang usually is, and how what the process does becomes beats, in its client's terms.
// A command whose language cannot be told (a shell script, a binary) gets both clients'.
var (
	// unseenWaits are the waits chaoskit never sees, whatever the clock: they hang for good.
	unseenWaits = map[string]string{
		"python": "a thread's join, a lock, an Event, a queue, a pipe or a socket of its own that nothing will wake",
		"node":   "a promise of its own that never settles, a lock, a pipe or a socket that nothing will wake; the client's requests, in Promise.all too, are seen",
		"":       "a thread, a promise, a lock, a pipe or a socket of its own that nothing will wake",
	}
	// sleeps are the command's own timed waits, and what becomes of them under each clock.
	sleeps = map[string]struct{ virtual, wall string }{
		"python": {"time.sleep and timeouts wait in virtual time", "time.sleep and timeouts wait on the wall clock, %s: wait with ck.sleep(seconds)"},
		"node":   {"setTimeout and timers/promises wait in virtual time", "setTimeout and timers/promises wait on the wall clock, %s: wait with await ck.sleep(ms)"},
		"":       {"sleeps wait in virtual time", "a sleep waits on the wall clock, %s: wait with the client's sleep, ck.sleep"},
	}
	noBeatHints = map[string]string{
		"python": "A process reaches chaoskit through its client: ck.call for tools, ck.model, ck.sleep, ck.mark after each durable step (with --disk fuse its writes in CHAOSKIT_STATE_DIR are beats too)",
		"node":   "A process reaches chaoskit through its client: await ck.call({tool, args, key}) for tools, ck.model, ck.sleep, ck.mark after each durable step (with --disk fuse its writes in CHAOSKIT_STATE_DIR are beats too)",
		"":       "A process reaches chaoskit through its client (PROTOCOL.md): its call requests for tools, model, sleep, and mark after each durable step (with --disk fuse its writes in CHAOSKIT_STATE_DIR are beats too)",
	}
)

// HangHint says, in the client's words of t's language, where a hang usually comes from: a
// wait nothing wakes, and, when its command runs on the wall clock (--clock wall, or a machine
// that cannot trap its clock), a sleep of its own.
func (t Target) HangHint() string {
	lang := t.language()
	if t.virtualClock() {
		return "the process waited where chaoskit does not see it (" + unseenWaits[lang] + "; " + sleeps[lang].virtual + ") or ran code of its own that never returned"
	}
	why := "as --clock wall asks"
	if t.Clock != WallClock {
		why = "since this machine cannot trap it"
	}
	return "the process waited where chaoskit does not see it (" + fmt.Sprintf(sleeps[lang].wall, why) + "; " + unseenWaits[lang] + ") or ran code of its own that never returned"
}

// virtualClock reports whether t's command runs on the virtual clock: it asks for it, and this
// machine can trap its clock.
func (t Target) virtualClock() bool {
	return t.Clock != WallClock && !noVirtual.Load() && !noSyncTrap.Load()
}

// NoBeatHint says, in the client's words of t's language, how what the process does becomes
// beats.
func (t Target) NoBeatHint() string { return noBeatHints[t.language()] }

// language returns "python" or "node" when a word of t's command names that interpreter or a
// script of it, else "".
func (t Target) language() string {
	for _, w := range t.Argv {
		base := filepath.Base(w)
		switch {
		case strings.HasPrefix(base, "python") || strings.HasSuffix(base, ".py") || base == "pytest" || base == "uv":
			return "python"
		case base == "node" || base == "deno" || base == "bun" || base == "tsx" || base == "npx" ||
			strings.HasSuffix(base, ".mjs") || strings.HasSuffix(base, ".js") || strings.HasSuffix(base, ".ts"):
			return "node"
		}
	}
	return ""
}

var _ sim.Hinter = Target{}
