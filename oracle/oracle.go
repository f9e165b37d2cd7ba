package oracle

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-cmp/cmp"
)

// Observation is what one run left behind, as the oracle needs it.
type Observation struct {
	// Completed says the run's last process returned without error.
	Completed bool
	// Err says how the run ended when it did not complete.
	Err string
	// Undecided, when set, says why the run cannot be judged (the target hung, say).
	Undecided string
	// Unrecoverable says that a fault destroyed durable data (a corruption flipped a bit)
	// during the run, so that stopping with an error is an acceptable, loud outcome.
	Unrecoverable bool
	// Stopped says the run ended because its last process returned an error or panicked,
	// rather than being given up by the harness (stuck, looping, out of restarts).
	Stopped bool
	// Refused says the last process stopped refusing to go on (harness.ErrRefused): a loud
	// stop that asks for a person, which Err says.
	Refused bool
	// Result is what the last process returned.
	Result any
	// State is the durable state read back after the run; StateErr says why it could not be.
	State    any
	StateErr string
	// Effects lists every application of a side effect, in order.
	Effects []Effect
	// KeyReuses lists the calls an IdempotentByKey tool refused because their key had been
	// used with other arguments, in order (harness.KeyReusedError).
	KeyReuses []KeyReuse
	// ModelCalls lists the purposes of the model calls that were answered, in order.
	ModelCalls []string
	// Calls lists the tool calls applied (a replay under a key included, a look-up not) and the
	// model calls answered, in the order they were made, after the first PrefixBeats beats:
	// what work lost is measured from when the target makes no progress marks.
	Calls []Call
	// PrefixBeats says the run began with the golden run's first PrefixBeats beats (a run
	// derived from the golden recording), whose calls Calls leaves out.
	PrefixBeats int
	// Beats counts the run's beats.
	Beats int
	// Marks lists the progress marks the target made, in order, after the first PrefixMarks.
	Marks []Mark
	// PrefixMarks says the run began with the golden run's first PrefixMarks marks, made as the
	// golden run made them (a run derived from the golden recording), which Marks leaves out.
	PrefixMarks int
	// Processes lists the processes of the run, in order; the golden run has one.
	Processes []Process
	// Trace holds a label per beat. The determinism check compares the traces of two golden
	// runs; it may be nil for other runs.
	Trace []string

	once  sync.Once
	index *index // of a golden observation: what every check against it looks up, made once
}

// index is what checks against a golden observation look up, made once however many cases
// are checked against it.
type index struct {
	marks   map[string][]int // a mark's label -> its positions among the marks
	effects map[string]int   // an effect's identity -> how often it was applied
}

// indexed returns o's index, making it the first time.
func (o *Observation) indexed() *index {
	o.once.Do(func() {
		x := &index{marks: map[string][]int{}, effects: map[string]int{}}
		for i, m := range o.Marks {
			x.marks[m.Label] = append(x.marks[m.Label], i)
		}
		for _, e := range o.Effects {
			x.effects[e.Identity]++
		}
		o.index = x
	})
	return o.index
}

// EffectCounts returns how often the run applied each effect, by its identity. The map is the
// observation's own, made once: read it, do not change it.
func (o *Observation) EffectCounts() map[string]int { return o.indexed().effects }

// Effect is one application of a side effect to the world.
type Effect struct {
	Tool     string
	Identity string // what the effect does: the tool and its arguments, not its idempotency key
	// Key is the idempotency key an idempotent-by-key tool applied the effect under, or "".
	Key     string
	Beat    int
	Process int
}

// KeyReuse is a call refused by an IdempotentByKey tool because its key had been used with other
// arguments: the tool and key, both argument sets (as JSON) and where each call was sent.
type KeyReuse struct {
	Tool, Key             string
	FirstArgs, NewArgs    string
	FirstBeat, Beat       int
	FirstProcess, Process int
}

// Call is a tool call applied or a model call answered, as work lost is measured from it.
type Call struct {
	// Model says it is a model call; otherwise it is a tool call.
	Model bool
	// Identity names the call as it would be made again: a model call's purpose (its request,
	// not its answer, which a diverging model changes), a tool call's tool and idempotency key,
	// else its tool and arguments.
	Identity string
	// Beat is the beat at which the call left its process; Process the process.
	Beat, Process int
}

// Mark is a progress point the target declared, at a beat, from a process.
type Mark struct {
	Beat    int
	Label   string
	Process int
}

// Process is one process of a run, as work lost is measured from it.
type Process struct {
	// First says it is the first process of its worker.
	First bool
	// Crashed says a fault crashed it; Failed that it ended on its own with an error or a
	// panic.
	Crashed, Failed bool
	// Marks counts the marks it made; SinceMark counts the beats it made after its last mark
	// (or since it started, without one), and ToFirstMark those before its first.
	Marks, SinceMark, ToFirstMark int
	// Frozen lists the times a lease fault froze it (the worker paused past its lease, as
	// under a long GC pause or a stopped VM), in order.
	Frozen []Freeze
}

// Freeze is one pause of a process by a lease fault.
type Freeze struct {
	// At is the beat the fault froze it at, and Woke the first beat it made after (-1: none).
	At, Woke int
	// Acted says that a tool call of the process was applied after it woke and before its next
	// mark (a call replayed by its key included, a look-up not): it did the step's work again,
	// rather than finish it.
	Acted bool
}

// Options tunes the oracle. The zero value is valid.
type Options struct {
	// Compare holds go-cmp options for comparing results and states, for example to ignore
	// run ids or timestamps.
	Compare []cmp.Option
	// WorkLostSlack is how many beats beyond the bound a restart may redo.
	WorkLostSlack int
	// Ordered names the tools whose effects must happen in the golden run's order, relative to
	// each other (ordered-effects): reserve before ship.
	Ordered map[string]bool
	// Repeated holds the effects the golden run applies more often than a run of fewer workers
	// does, each with that run's count, which a case is held to instead: a golden run of
	// several workers (a fleet fault's) whose workers both act, with no lease, repeats effects
	// with no fault at all, and is no reference for how often they may happen.
	Repeated map[string]int
	// ByKey identifies an effect applied under an idempotency key by its tool and key rather
	// than its arguments: an upgrade case's, whose next version may send other arguments under
	// the key of the same effect (Upgraded).
	ByKey bool
}

// Verdict is the oracle's judgement of one faulty run against the golden run.
type Verdict struct {
	Outcome    Outcome
	Violations []Violation
	Metrics    Metrics
	// NotChecked lists properties that could not be evaluated, each with the reason.
	NotChecked []string
	// Detected is the error with which the target stopped loudly on an unrecoverable fault.
	Detected string
	// Refused is the error with which the target refused to go on, not knowing what was safe:
	// an outcome apart, not a violation of completes, that a campaign counts and a gate can
	// forbid.
	Refused string
	// Reason says why the verdict is unknown.
	Reason string
	// Reference, when set, says the case was judged against another reference than the golden
	// run, and which: the run in which the model answered some requests otherwise from the start
	// (a model-diverge fault made the case take those answers).
	Reference string
	// Diff is the first state or result difference, "-golden +faulty".
	Diff string
	// DuplicatesByTool counts excess effect applications per tool.
	DuplicatesByTool map[string]int
	// KeyReuses lists the calls refused because their key had been used with other arguments
	// (no-key-reuse), with where each was sent.
	KeyReuses []KeyReuse
	// Excess lists, in order, the applications of every effect applied more often than in the
	// golden run (all of them, the first included: which is the extra one is a matter of
	// view) and of every effect the golden run never applied: the beats that explain
	// no-duplicate-effects and no-phantom-effects.
	Excess []Effect
}

// Check judges a faulty run against the golden run: it measures the metrics and evaluates every
// property. It is a pure function of its arguments.
func Check(golden, faulty *Observation, opts Options) Verdict {
	var v Verdict
	v.Metrics.GoldenBeats = golden.Beats
	v.Metrics.Beats = faulty.Beats
	for _, a := range faulty.Processes {
		if !a.First {
			v.Metrics.Restarts++
		}
		if a.Failed {
			v.Metrics.FailedProcesses++
		}
	}
	if faulty.Undecided != "" {
		v.Outcome, v.Reason = Unknown, faulty.Undecided
		return v
	}

	completed := faulty.Completed
	switch {
	case completed:
	case faulty.Refused:
		v.Refused = faulty.Err
	case faulty.Unrecoverable && faulty.Stopped:
		v.Detected = faulty.Err
	default:
		v.fail(Completes, faulty.Err)
	}

	want, applied, goldenFx := golden.indexed().effects, faulty.Effects, golden.Effects
	if opts.ByKey {
		goldenFx, applied = byKey(golden.Effects), byKey(faulty.Effects)
		want = map[string]int{}
		for _, e := range goldenFx {
			want[e.Identity]++
		}
	}
	if len(opts.Repeated) > 0 {
		want = maps.Clone(want)
		maps.Copy(want, opts.Repeated)
	}
	fx := compareEffects(want, applied)
	v.Metrics.Duplicates, v.Metrics.PhantomEffects = fx.dup, fx.phantom
	if completed { // a run that stopped short lost the rest of its effects by stopping
		v.Metrics.LostEffects = fx.lost
	}
	v.DuplicatesByTool = fx.dupByTool
	for _, list := range [][]effectCount{fx.dups, fx.phantoms} {
		for _, c := range list {
			v.Excess = append(v.Excess, c.at...)
		}
	}
	slices.SortStableFunc(v.Excess, func(a, b Effect) int { return a.Beat - b.Beat })
	if fx.dup > 0 {
		v.fail(NoDuplicateEffects, fx.detail(fx.dups)+repeatedNote(golden, fx.dups, opts.Repeated))
	}
	if fx.phantom > 0 {
		v.fail(NoPhantomEffects, fx.detail(fx.phantoms))
	}
	if len(faulty.KeyReuses) > 0 {
		v.KeyReuses = faulty.KeyReuses
		v.fail(NoKeyReuse, keyReuseDetail(golden, faulty.KeyReuses))
	}
	if d := outOfOrder(goldenFx, applied, opts.Ordered); d != "" {
		v.fail(OrderedEffects, d)
	}
	if !completed {
		v.skip(SameResult, "the run did not complete")
		v.skip(SameState, "the run did not complete")
		v.skip(NoLostEffects, "the run did not complete")
	} else {
		if fx.lost > 0 {
			v.fail(NoLostEffects, fx.detail(fx.losts))
		}
		v.compare(SameResult, "result", golden.Result, faulty.Result, "", opts.Compare)
		v.compare(SameState, "state", golden.State, faulty.State, faulty.StateErr, opts.Compare)
	}

	v.Metrics.ModelCallsRemade = remade(golden.ModelCalls, faulty.ModelCalls)
	w := measureWork(golden, faulty, opts.WorkLostSlack)
	if !w.checked {
		w = measureCalls(golden, faulty, opts.WorkLostSlack)
	}
	v.Metrics.WorkLostBeats, v.Metrics.ResumeBeats = w.lost, w.resume
	switch {
	case v.Detected != "":
		// A corruption that the target detected and stopped on: what it would have redone is
		// not known. One it went on from is judged, as a kill is (see Verdict.Excuse).
		v.skip(BoundedWorkLost, "the target stopped loudly on the damage a corruption did")
	case !w.checked:
		v.Metrics.WorkLostUnmeasured = true
		v.skip(BoundedWorkLost, "the target made neither progress marks nor model calls (mark each durable step: Env.Mark in Go, mark in the process clients)")
	case len(w.over) > 0:
		v.fail(BoundedWorkLost, strings.Join(w.over, "\n"))
	}

	v.decide()
	return v
}

// byKey returns effects with the identity of each applied under an idempotency key made its
// tool and key (Options.ByKey).
func byKey(effects []Effect) []Effect {
	out := slices.Clone(effects)
	for i, e := range out {
		if e.Key != "" {
			out[i].Identity = e.Tool + " key=" + e.Key
		}
	}
	return out
}

// decide sets the outcome from the violations and the reason the verdict is unknown.
func (v *Verdict) decide() {
	switch {
	case len(v.Violations) > 0:
		v.Outcome = Fail
	case v.Reason != "":
		v.Outcome = Unknown
	default:
		v.Outcome = Pass
	}
}

// Breaks reports whether v violates the named property.
func (v *Verdict) Breaks(property string) bool {
	for _, x := range v.Violations {
		if x.Property == property {
			return true
		}
	}
	return false
}

// Excuse withdraws the violations of property, saying why it is not held against the run (it
// goes to NotChecked), and decides the outcome again: for what a check of two observations
// alone cannot tell, such as how much of the work a corrupted run redid a kill at the same beat
// would have redone too (package sim's runner, which can run that kill, asks).
func (v *Verdict) Excuse(property, why string) {
	n := len(v.Violations)
	v.Violations = slices.DeleteFunc(v.Violations, func(x Violation) bool { return x.Property == property })
	if len(v.Violations) == n {
		return
	}
	v.skip(property, why)
	v.decide()
}

// Summary sums the verdict up in a few words: its violated properties, or why it is unknown.
func (v *Verdict) Summary() string {
	if len(v.Violations) > 0 {
		var ps []string
		for _, x := range v.Violations {
			ps = append(ps, x.Property)
		}
		return strings.Join(ps, ", ")
	}
	if v.Reason != "" {
		return v.Reason
	}
	return "no violation"
}

func (v *Verdict) fail(property, detail string) {
	v.Violations = append(v.Violations, Violation{Property: property, Detail: detail})
}

func (v *Verdict) skip(property, why string) {
	v.NotChecked = append(v.NotChecked, property+": "+why)
}

// compare checks one of same-result and same-state. Values it cannot compare leave the
// property unchecked, with the reason; the case is then unknown unless something else failed.
func (v *Verdict) compare(property, what string, golden, faulty any, readErr string, opts []cmp.Option) {
	if readErr != "" {
		v.fail(property, "the "+what+" could not be read back: "+readErr)
		if property == SameState {
			v.Metrics.StateMismatch = true
		}
		return
	}
	defer func() {
		if p := recover(); p != nil {
			why := fmt.Sprintf("cannot compare %ss: %v (give the target go-cmp options)", what, p)
			v.skip(property, why)
			if v.Reason == "" {
				v.Reason = why
			}
		}
	}()
	if d := diff(golden, faulty, opts); d != "" {
		v.fail(property, "the "+what+" differs from the golden run's (-golden +faulty):\n"+d)
		if v.Diff == "" {
			v.Diff = d
		}
		if property == SameState {
			v.Metrics.StateMismatch = true
		}
	}
}

// keyReuseDetail says, a line per refused call, which key of which tool was used again with
// which arguments, and whether the golden run, with no fault, does the same.
func keyReuseDetail(golden *Observation, reuses []KeyReuse) string {
	inGolden := map[string]bool{}
	for _, r := range golden.KeyReuses {
		inGolden[r.Tool+"\x00"+r.Key] = true
	}
	var lines []string
	for _, r := range reuses {
		line := fmt.Sprintf("%s key %q, first used with %s (beat %d, process %d), was used again with %s (beat %d, process %d): the tool refused it",
			r.Tool, r.Key, r.FirstArgs, r.FirstBeat, r.FirstProcess, r.NewArgs, r.Beat, r.Process)
		if inGolden[r.Tool+"\x00"+r.Key] {
			line += "; the golden run, with no fault, does so too: a key must name one effect, so a call with other arguments needs a key of its own"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// remade counts the faulty run's model calls beyond the golden run's, purpose by purpose.
func remade(golden, faulty []string) int {
	n := map[string]int{}
	for _, p := range golden {
		n[p]++
	}
	extra := 0
	for _, p := range faulty {
		if n[p] > 0 {
			n[p]--
		} else {
			extra++
		}
	}
	return extra
}

// effects compares the effect applications of two runs by identity.
type effects struct {
	dup, lost, phantom    int
	dups, losts, phantoms []effectCount
	dupByTool             map[string]int
}

type effectCount struct {
	identity       string
	golden, faulty int
	at             []Effect // the faulty applications
}

func compareEffects(g map[string]int, faulty []Effect) effects {
	f := map[string][]Effect{}
	var order []string
	for _, e := range faulty {
		if _, ok := f[e.Identity]; !ok {
			order = append(order, e.Identity)
		}
		f[e.Identity] = append(f[e.Identity], e)
	}
	var r effects
	for _, id := range order {
		at, want := f[id], g[id]
		switch {
		case want == 0:
			r.phantom += len(at)
			r.phantoms = append(r.phantoms, effectCount{id, 0, len(at), at})
		case len(at) > want:
			r.dup += len(at) - want
			r.dups = append(r.dups, effectCount{id, want, len(at), at})
			if r.dupByTool == nil {
				r.dupByTool = map[string]int{}
			}
			r.dupByTool[at[0].Tool] += len(at) - want
		}
	}
	var missing []string
	for id := range g {
		if len(f[id]) < g[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	for _, id := range missing {
		r.lost += g[id] - len(f[id])
		r.losts = append(r.losts, effectCount{id, g[id], len(f[id]), f[id]})
	}
	return r
}

// repeatedNote says, for the duplicated effects dups that the golden run itself repeats
// (Options.Repeated), why they are counted against fewer workers' run; "" if none is.
func repeatedNote(golden *Observation, dups []effectCount, repeated map[string]int) string {
	var ids []string
	for _, c := range dups {
		if _, ok := repeated[c.identity]; ok {
			ids = append(ids, fmt.Sprintf("%s %d×", c.identity, golden.indexed().effects[c.identity]))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "\nthe golden run itself, with no fault, applies " + strings.Join(ids, ", ") + ": its workers run at once and repeat effects (take a lease and check it before acting, or leave the fleet faults out)"
}

// detail says, a line per effect, how often it was applied and by which calls: the beats at which
// they were sent (where a trace shows "sent"), in order, whatever order they were applied in.
func (effects) detail(list []effectCount) string {
	var lines []string
	for _, c := range list {
		line := fmt.Sprintf("%s applied %d× (golden %d×)", c.identity, c.faulty, c.golden)
		if len(c.at) > 0 {
			sent := slices.SortedFunc(slices.Values(c.at), func(a, b Effect) int {
				if a.Beat != b.Beat {
					return a.Beat - b.Beat
				}
				return a.Process - b.Process
			})
			var at []string
			for _, e := range sent {
				at = append(at, fmt.Sprintf("beat %d (process %d)", e.Beat, e.Process))
			}
			calls := "the call"
			if len(at) > 1 {
				calls = "the calls"
			}
			line += fmt.Sprintf(" by %s sent at %s", calls, strings.Join(at, ", "))
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// outOfOrder checks that the effects of ordered tools that both runs applied were first applied
// in the same order, and says where they were not, or returns "".
func outOfOrder(golden, faulty []Effect, ordered map[string]bool) string {
	if len(ordered) == 0 {
		return ""
	}
	firsts := func(es []Effect) []string {
		var out []string
		seen := map[string]bool{}
		for _, e := range es {
			if ordered[e.Tool] && !seen[e.Identity] {
				seen[e.Identity] = true
				out = append(out, e.Identity)
			}
		}
		return out
	}
	g, f := firsts(golden), firsts(faulty)
	in := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, id := range list {
			m[id] = true
		}
		return m
	}
	inG, inF := in(g), in(f)
	g = slices.DeleteFunc(g, func(id string) bool { return !inF[id] })
	f = slices.DeleteFunc(f, func(id string) bool { return !inG[id] })
	for i := range f {
		if f[i] != g[i] {
			return fmt.Sprintf("%s was applied before %s, which the golden run applied first", f[i], g[i])
		}
	}
	return ""
}
