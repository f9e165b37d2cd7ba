package process

import (
	"path/filepath"
	"strings"

	"github.com/chaoskit/chaoskit/sim"
)

// The words of a process target's messages, by the language its command runs (sim.Hinter):
// what a hang usually is, and how what the process does becomes beats, in its client's terms.
// A command whose language cannot be told (a shell script, a binary) gets both clients'.
var (
	hangHints = map[string]string{
		"python": "the process waited where chaoskit does not see it (a thread's join, a lock, an Event, a queue, a pipe or a socket of its own that nothing will wake; time.sleep and timeouts wait in virtual time, unless --clock wall: then wait with ck.sleep(seconds)) or ran code of its own that never returned",
		"node":   "the process waited where chaoskit does not see it (a promise of its own that never settles, a lock, a pipe or a socket that nothing will wake; setTimeout and timers/promises wait in virtual time, unless --clock wall: then wait with await ck.sleep(ms); the client's requests, in Promise.all too, are seen) or ran code of its own that never returned",
		"":       "the process waited where chaoskit does not see it (a thread, a promise, a lock, a pipe or a socket of its own that nothing will wake; sleeps wait in virtual time, unless --clock wall: then wait with the client's sleep, ck.sleep) or ran code of its own that never returned",
	}
	noBeatHints = map[string]string{
		"python": "A process reaches chaoskit through its client: ck.call for tools, ck.model, ck.sleep, ck.mark after each durable step (with --disk fuse its writes in CHAOSKIT_STATE_DIR are beats too)",
		"node":   "A process reaches chaoskit through its client: await ck.call({tool, args, key}) for tools, ck.model, ck.sleep, ck.mark after each durable step (with --disk fuse its writes in CHAOSKIT_STATE_DIR are beats too)",
		"":       "A process reaches chaoskit through its client (PROTOCOL.md): its call requests for tools, model, sleep, and mark after each durable step (with --disk fuse its writes in CHAOSKIT_STATE_DIR are beats too)",
	}
)

// HangHint says, in the client's words of t's language, where a hang usually comes from.
func (t Target) HangHint() string { return hangHints[t.language()] }

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
