package campaign

import (
	"fmt"
	"hash/fnv"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/sim"
)

// Schedules returns the schedules of a campaign over rn's target, in the order they run.
//
// In Exhaustive mode that is one case per fault kind per golden beat at which the kind can fire:
// kill, power and corrupt at every beat, and power:subset too where some operation not yet
// fsynced is there to keep (where it can differ from a plain power loss); torn at every beat
// where a power loss would find an un-fsynced write to tear, once per mode that tears it
// differently from a plain power loss; power, and each mode of power and torn where it would
// differ so, after the run's end too (power@end: once the last process has exited, what it
// wrote without an fsync is lost; faults.KindInfo.AtEnd); diskfull at every write, with room for half of it, for
// Options.DiskFullFor; fsyncfail at every fsync; lease once per pause of Options.LeasePauses.
// In Random mode it is Options.Cases distinct draws from the seed (see Draw), or fewer when a
// short golden run has fewer to draw (after 1,000 draws in a row that repeat one, the space
// counts as exhausted); a draw whose later faults, placed where they fire, make it a schedule
// an earlier draw made is left out (see randomSchedules), its index left unused, so that a
// schedule's index in a Random campaign may be more than its position in the list.
//
// It returns an error if the golden run a kind needs (with several workers, for the fleet
// faults) cannot be recorded.
func Schedules(rn *sim.Runner, o Options) ([]faults.Schedule, error) {
	seq, err := scheduleSeq(rn, o, every)
	if err != nil {
		return nil, err
	}
	var out []faults.Schedule
	for _, s := range seq {
		out = append(out, s)
	}
	return out, nil
}

// every holds every index.
func every(int) bool { return true }

// scheduleSeq returns the schedules of Schedules one at a time, each with its index in the
// campaign, drawing or listing each only when it is asked for, so that a campaign of any size
// holds none of them in memory. (A Random campaign remembers a 64-bit hash of each schedule
// drawn, to draw no schedule twice.) Only the indexes holds holds are drawn in full, the others
// yielded with a nil schedule: in a Random campaign drawing one in full runs the target to
// place its later faults (Draw), which a shard needs of its own cases only. Each iteration
// yields the same schedules in the same order.
func scheduleSeq(rn *sim.Runner, o Options, holds func(index int) bool) (iter.Seq2[int, faults.Schedule], error) {
	o = o.withDefaults()
	o.Faults = deployable(rn, o.Faults)
	for _, k := range o.Faults {
		if why := rn.Unsupported(k); why != "" {
			return nil, &UnsupportedError{Target: rn.Options().Name, Kind: k, Why: why}
		}
	}
	if o.Mode == Random {
		return randomSchedules(rn, o, holds)
	}
	all, err := exhaustive(rn, o)
	if err != nil {
		return nil, err
	}
	total := 0
	for range all {
		total++
	}
	n := o.Cases
	if n <= 0 || total <= n {
		n = total
	}
	// A sample, evenly, so that every kind keeps its share: the schedules at i*total/n (all of
	// them when n is total). Listing one costs nothing: every index gets its schedule.
	return func(yield func(int, faults.Schedule) bool) {
		i, at := 0, 0
		for s := range all {
			if at == i*total/n {
				if !yield(i, s) {
					return
				}
				i++
			}
			at++
		}
	}, nil
}

// exhaustive returns the schedules of an Exhaustive campaign, every one (see Schedules).
func exhaustive(rn *sim.Runner, o Options) (iter.Seq[faults.Schedule], error) {
	goldens := make([]*sim.Golden, len(o.Faults))
	for i, kind := range o.Faults {
		g, err := rn.Golden(faults.Schedule{{Kind: kind}})
		if err != nil {
			return nil, err
		}
		goldens[i] = g
	}
	return func(yield func(faults.Schedule) bool) {
		for i, kind := range o.Faults {
			if !exhaustiveKind(goldens[i], kind, o, yield) {
				return
			}
		}
		if o.Depth >= 2 {
			crashThenPower(rn, o, yield)
		}
	}, nil
}

// crashThenPower yields the schedules Depth 2 adds (see Options.Depth): a kill at each beat of
// the golden run where one applies, then a power cut in each mode of power at each beat of the
// recovery. It returns false if yield did.
func crashThenPower(rn *sim.Runner, o Options, yield func(faults.Schedule) bool) bool {
	if !slices.Contains(o.Faults, faults.Kill) || !slices.Contains(o.Faults, faults.Power) {
		return true
	}
	g, _ := rn.Golden(nil)
	power, _ := faults.Power.Info()
	for k := range g.Len() {
		if !g.Beat(k).Admits(faults.Kill) {
			continue
		}
		for _, j := range rn.Recovery(k) {
			for i, mode := range power.Modes {
				if i == 0 {
					mode = ""
				}
				if !yield(faults.Schedule{{Kind: faults.Kill, Beat: k}, {Kind: faults.Power, Beat: j, Mode: mode}}) {
					return false
				}
			}
		}
	}
	return true
}

// exhaustiveKind yields the schedules of one fault kind of an Exhaustive campaign over golden
// run g, and returns false if yield did.
func exhaustiveKind(g *sim.Golden, kind faults.Kind, o Options, yield func(faults.Schedule) bool) bool {
	info, _ := kind.Info()
	alt := false // a model call with an alternative answer came before beat k
	for k := range g.Len() {
		b := g.Beat(k)
		if !b.Admits(kind) || info.Listed == faults.AfterAlternative && !alt {
			alt = alt || b.Kind == sim.BeatModel && b.Alt
			continue
		}
		alt = alt || b.Kind == sim.BeatModel && b.Alt
		f := faults.Fault{Kind: kind, Beat: k}
		switch info.Listed {
		case faults.EachPause:
			for _, d := range o.LeasePauses {
				f.Dur = d
				if !yield(faults.Schedule{f}) {
					return false
				}
			}
			continue
		case faults.WhereModesDiffer, faults.PlainAndWhereModesDiffer:
			// Each mode where it leaves the disk otherwise than a plain power loss; a plain one
			// (the first mode, listed PlainAndWhereModesDiffer) everywhere.
			for i, mode := range info.Modes {
				if info.Listed == faults.PlainAndWhereModesDiffer && i == 0 || g.Tearable(k, mode) {
					f.Mode = mode
					if i == 0 {
						f.Mode = ""
					}
					if !yield(faults.Schedule{f}) {
						return false
					}
				}
			}
			continue
		case faults.HalfTheWrite:
			f.Bytes = int64(b.Op.Len / 2)
			f.Dur = o.diskFullDur()
		}
		if !yield(faults.Schedule{f}) {
			return false
		}
	}
	if info.AtEnd { // and after the run's end, once the last process has exited
		for i, mode := range info.Modes {
			if info.Listed == faults.PlainAndWhereModesDiffer && i == 0 || g.Tearable(faults.End, mode) {
				f := faults.Fault{Kind: kind, Beat: faults.End, Mode: mode}
				if i == 0 {
					f.Mode = ""
				}
				if !yield(faults.Schedule{f}) {
					return false
				}
			}
		}
	}
	return true
}

// UnsupportedError reports a campaign asking for a fault kind its target cannot honour
// (harness.Limits).
type UnsupportedError struct {
	Target string
	Kind   faults.Kind
	Why    string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s faults cannot apply to %s: %s", e.Kind, e.Target, e.Why)
}

// randomSchedules draws Options.Cases distinct schedules from the seed, lazily, placing the
// later faults of those of the indexes holds holds (Draw).
//
// The draws are numbered, and told apart, before their faults are placed, for placing them runs
// the target: a shard places its own cases only, and every shard numbers the draws alike. Where
// the campaign's source stood before each draw is kept (24 bytes), so that it can be drawn again
// without keeping it. Placing can make two draws one schedule (a later fault moved to the beat
// where another's already was, or dropped); only draws with the same first fault can meet so,
// for placing never moves it. The second of two such then has its later faults drawn again
// (from a source of its own, its index and attempt: redraw), up to maxRedraws times, and is left out,
// its index unused, if every one repeats too (a short golden run with few schedules to draw). So to tell a case from the repeat of
// another, a shard places, of the others' draws, only those with its case's first fault.
func randomSchedules(rn *sim.Runner, o Options, holds func(int) bool) (iter.Seq2[int, faults.Schedule], error) {
	d, err := newDrawer(rn, o)
	if err != nil {
		return nil, err
	}
	return func(yield func(int, faults.Schedule) bool) {
		pcg := rand.NewPCG(o.Seed, 0x72616e646f6d)
		rng := rand.New(pcg)
		pick := func(n int, _ string) int { return rng.IntN(n) }
		seen := newHashSet(o.Cases)   // the draws, as drawn
		finals := newHashSet(o.Cases) // the schedules they came to, of those worked out
		var states []byte             // where the source stood before each draw counted, pcgState bytes each
		classes := map[uint64]*class{}
		for n, misses := 0, 0; n < o.Cases && misses < maxMisses; {
			state, _ := pcg.MarshalBinary()
			raw := d.draw(pick)
			if !seen.add(scheduleHash(raw)) {
				misses++
				continue
			}
			misses = 0
			index := n
			n++
			states = append(states, state...)
			key := scheduleHash(raw[:1])
			c := classes[key]
			if c == nil {
				c = &class{}
				classes[key] = c
			}
			c.draws = append(c.draws, int32(index))
			if !holds(index) {
				if !yield(index, nil) {
					return
				}
				continue
			}
			if s := d.final(c, finals, states); s != nil && !yield(index, s) {
				return
			}
		}
	}, nil
}

// pcgState is the size of a rand.PCG's state as MarshalBinary writes it.
var pcgState = func() int {
	b, _ := rand.NewPCG(0, 0).MarshalBinary()
	return len(b)
}()

// class holds the indexes of the draws of a random campaign that share a first fault (or the
// hash of one), in order, and how many of them have been worked out (final).
type class struct {
	draws []int32
	done  int
}

// maxRedraws is how many times a draw whose placed faults repeat an earlier draw's schedule has
// its later faults drawn again before it is left out.
const maxRedraws = 100

// final returns the schedule the last draw of c comes to, placed, or nil if it is left out (see
// randomSchedules), having worked out those of the draws before it, on which it depends, first;
// finals holds the schedules worked out so far, of every class (two classes' cannot be one), and
// states where the campaign's source stood before each draw, to draw it again.
func (d *drawer) final(c *class, finals *hashSet, states []byte) faults.Schedule {
	var s faults.Schedule
	for ; c.done < len(c.draws); c.done++ {
		index := int(c.draws[c.done])
		pcg := new(rand.PCG)
		if err := pcg.UnmarshalBinary(states[index*pcgState : (index+1)*pcgState]); err != nil {
			panic(err) // marshalled by the same type
		}
		rng := rand.New(pcg)
		raw := d.draw(func(n int, _ string) int { return rng.IntN(n) })
		s = nil
		for a := 0; a <= maxRedraws && s == nil; a++ {
			cand := raw
			if a > 0 {
				cand = d.redraw(raw, d.source(index, a))
			}
			if cand = d.place(slices.Clone(cand)); finals.add(scheduleHash(cand)) {
				s = cand
			}
		}
	}
	return s
}

// source returns the source of choices of the a-th redraw of the draw of the given index (see
// randomSchedules).
func (d *drawer) source(index, a int) func(n int, what string) int {
	rng := rand.New(rand.NewPCG(d.o.Seed, 0x7265647261770000^uint64(index)<<8^uint64(a)))
	return func(n int, _ string) int { return rng.IntN(n) }
}

// hashSet is a set of 64-bit hashes, open-addressed: 16 bytes a hash at most, half a map's.
type hashSet struct {
	slots []uint64 // 0: empty; a hash of 0 is kept as 1
	n     int
}

// newHashSet returns a set sized for n hashes.
func newHashSet(n int) *hashSet {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return &hashSet{slots: make([]uint64, size)}
}

// add adds h to the set and reports whether it was not there.
func (s *hashSet) add(h uint64) bool {
	if 2*(s.n+1) > len(s.slots) {
		old := s.slots
		s.slots, s.n = make([]uint64, 2*len(old)), 0
		for _, v := range old {
			if v != 0 {
				s.add(v)
			}
		}
	}
	h = max(h, 1)
	mask := uint64(len(s.slots) - 1)
	for i := (h * 0x9e3779b97f4a7c15 >> 32) & mask; ; i = (i + 1) & mask { // the hash's bits mixed
		switch s.slots[i] {
		case h:
			return false
		case 0:
			s.slots[i] = h
			s.n++
			return true
		}
	}
}

// scheduleHash is a 64-bit hash of a schedule's text form: two schedules drawn by one campaign
// share one with a chance of about one in 10^7 in a million draws, and the later of them is then
// taken for a repeat, deterministically.
func scheduleHash(s faults.Schedule) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s.String()))
	return h.Sum64()
}

// maxMisses is how many draws in a row may repeat schedules already drawn before a Random
// campaign takes the space of schedules as exhausted and runs fewer than Options.Cases.
const maxMisses = 1000

// Draw draws one random schedule for rn's target: up to Options.MaxFaults faults of the kinds
// of Options.Faults, each with a random argument where its kind takes one (a switch to any
// worker, or to a chosen one), a diskfull lasting Options.DiskFullFor. The first fault falls on
// a beat of the golden run at which its kind applies, so that it fires; the others fall at
// distinct later beats reaching half again past the golden run, so that they land in
// recoveries. A fault fires only at a beat that admits its kind (sim.Beat.Admits), and the
// beats of a recovery are not the golden run's: a later fault of a kind that fires only at some
// beats (a diskfull at a write, a tool fault at a tool call) is put at the first beat at or after
// the one drawn for it where it fires in the run of the faults before it (which
// sim.Runner.Beats runs), and is left out if there is none, so that every such fault fires
// where it is written (and no two schedules drawn name one case for it). A later fault of a kind
// that fires at any beat stays where it was drawn, with no run to place it: past the run's end it
// does not fire, which the case records.
// pick(n, what) returns a number in [0, n); what names the choice.
//
// It is the one engine behind random schedules: a Random campaign picks from a source seeded by
// Options.Seed, and package chaoskittest can pick through rapid. It returns an error if no kind
// of Options.Faults applies to any beat of the golden run.
func Draw(rn *sim.Runner, o Options, pick func(n int, what string) int) (faults.Schedule, error) {
	d, err := newDrawer(rn, o)
	if err != nil {
		return nil, err
	}
	return d.place(d.draw(pick)), nil
}

// drawer draws random schedules for one target.
type drawer struct {
	rn      *sim.Runner
	o       Options
	fleet   int                      // workers of a fleet
	goldens [2]*sim.Golden           // of one worker, of a fleet
	admits  [2]map[faults.Kind][]int // the golden beats each kind applies at, per golden
	usable  [2][]faults.Kind         // the kinds that apply somewhere, per golden
	probes  *probes                  // where later faults can fire, by the faults before them
}

func newDrawer(rn *sim.Runner, o Options) (*drawer, error) {
	o = o.withDefaults()
	o.Faults = deployable(rn, o.Faults)
	d := &drawer{rn: rn, o: o, fleet: rn.Options().FleetWorkers, probes: newProbes()}
	for i, s := range []faults.Schedule{nil, {{Kind: faults.Lease}}} {
		if i == 1 && !slices.ContainsFunc(o.Faults, isFleet) {
			break
		}
		g, err := rn.Golden(s)
		if err != nil {
			return nil, err
		}
		d.goldens[i], d.admits[i] = g, map[faults.Kind][]int{}
		for _, k := range o.Faults {
			for b := range g.Len() {
				if g.Beat(b).Admits(k) {
					d.admits[i][k] = append(d.admits[i][k], b)
				}
			}
			if len(d.admits[i][k]) > 0 {
				d.usable[i] = append(d.usable[i], k)
			}
		}
	}
	if len(d.usable[0]) == 0 && len(d.usable[1]) == 0 {
		return nil, fmt.Errorf("none of the fault kinds %v applies to any beat of %s's golden run", o.Faults, rn.Options().Name)
	}
	return d, nil
}

// isFleet reports whether a case of kind k runs a fleet of workers (a deploy of the next
// version does not).
func isFleet(k faults.Kind) bool {
	info, _ := k.Info()
	return info.Family == faults.FleetFamily && !info.NextVersion
}

// deployable returns kinds without the deploy of a next version (upgrade) if rn's target has
// none: it is listed and drawn only for a target given one, and a family of kinds (fleet, all)
// holds it whether or not.
func deployable(rn *sim.Runner, kinds []faults.Kind) []faults.Kind {
	return slices.DeleteFunc(slices.Clone(kinds), func(k faults.Kind) bool {
		info, _ := k.Info()
		return info.Listed == faults.WithNextVersion && rn.Unsupported(k) != ""
	})
}

// draw draws one schedule (see Draw), its later faults not yet placed (place).
func (d *drawer) draw(pick func(n int, what string) int) faults.Schedule {
	n := 1 + pick(d.o.MaxFaults, "faults")
	kinds := make([]faults.Kind, n)
	fleet := 0
	for i := range kinds {
		kinds[i] = d.o.Faults[pick(len(d.o.Faults), "kind")]
		if isFleet(kinds[i]) {
			fleet = 1 // the case runs a fleet, against the fleet's golden run
		}
	}
	if len(d.admits[fleet][kinds[0]]) == 0 {
		if len(d.usable[fleet]) == 0 {
			fleet = 1 - fleet
		}
		kinds[0] = d.usable[fleet][pick(len(d.usable[fleet]), "kind")]
		if isFleet(kinds[0]) {
			fleet = 1
		}
	}
	at := d.admits[fleet][kinds[0]]
	return d.later(faults.Fault{Kind: kinds[0], Beat: at[pick(len(at), "beat")]}, kinds[1:], fleet, pick, true)
}

// later draws faults of the given kinds after first, at distinct beats reaching half again past
// the golden run of the fleet or not (as many as there are beats for), then the argument of each
// (first's too, if withFirst); and returns the schedule, first first.
func (d *drawer) later(first faults.Fault, kinds []faults.Kind, fleet int, pick func(n int, what string) int, withFirst bool) faults.Schedule {
	span := d.goldens[fleet].Len()*3/2 + 1
	beats := map[int]bool{}
	for len(beats) < min(len(kinds), span-first.Beat-1) {
		beats[first.Beat+1+pick(span-first.Beat-1, "beat")] = true
	}
	s := faults.Schedule{first}
	for i, b := range slices.Sorted(maps.Keys(beats)) {
		s = append(s, faults.Fault{Kind: kinds[i], Beat: b})
	}
	for i := range s {
		if i > 0 || withFirst {
			d.args(&s[i], pick)
		}
	}
	return s
}

// redraw draws the later faults of draw raw again (see randomSchedules): how many, their kinds,
// beats and arguments, its first fault kept, and with it whether the case runs a fleet (a kind
// that needs one stays, or comes, among the later ones as it was in raw).
func (d *drawer) redraw(raw faults.Schedule, pick func(n int, what string) int) faults.Schedule {
	fleet := 0
	if slices.ContainsFunc(raw, func(f faults.Fault) bool { return isFleet(f.Kind) }) {
		fleet = 1
	}
	for range 20 {
		kinds := make([]faults.Kind, pick(d.o.MaxFaults, "faults"))
		for i := range kinds {
			kinds[i] = d.o.Faults[pick(len(d.o.Faults), "kind")]
		}
		if isFleet(raw[0].Kind) || slices.ContainsFunc(kinds, isFleet) == (fleet == 1) {
			return d.later(raw[0], kinds, fleet, pick, false)
		}
	}
	var kinds []faults.Kind // none drawn alike: raw's kinds, at other beats
	for _, f := range raw[1:] {
		kinds = append(kinds, f.Kind)
	}
	return d.later(raw[0], kinds, fleet, pick, false)
}

// args draws the argument of fault f where its kind takes one (a switch to any worker, or to a
// chosen one), a diskfull lasting Options.DiskFullFor.
func (d *drawer) args(f *faults.Fault, pick func(n int, what string) int) {
	info, _ := f.Kind.Info()
	switch info.Arg {
	case faults.BytesArg:
		f.Bytes = int64(pick(1024, "bytes"))
		if info.Lasts {
			f.Dur = d.o.diskFullDur()
		}
	case faults.ModeArg:
		if m := pick(len(info.Modes), "mode"); m > 0 {
			f.Mode = info.Modes[m]
		}
	case faults.DurationArg:
		f.Dur = d.o.LeasePauses[pick(len(d.o.LeasePauses), "pause")]
	case faults.WorkerArg:
		f.Worker = pick(d.fleet+1, "worker") // 0: the scheduler's choice; W+1: worker W
	}
}

// place puts each fault of s after the first whose kind fires only at some beats at the first
// beat at or after its own where it fires in the run of the faults before it, or leaves it out if
// there is none, moving the faults after it past it (see Draw).
func (d *drawer) place(s faults.Schedule) faults.Schedule {
	for i := 1; i < len(s); i++ {
		for j := i; j < len(s) && s[j].Beat <= s[j-1].Beat; j++ { // keep s in order: a probe validates it
			s[j].Beat = s[j-1].Beat + 1
		}
		if info, _ := s[i].Kind.Info(); info.On == faults.AnyBeat {
			continue
		}
		admits := d.probes.get(d.rn, d.o.Faults, s, i)
		bit := uint32(1) << slices.Index(d.o.Faults, s[i].Kind)
		at := s[i].Beat
		for at < len(admits) && admits[at]&bit == 0 {
			at++
		}
		if at >= len(admits) {
			s = slices.Delete(s, i, i+1)
			i--
			continue
		}
		s[i].Beat = at
	}
	return s
}

// probes remembers, for the last schedules a drawer placed faults after, which of the beats of
// their run admit which kind: the campaign draws its schedules more than once (to count and check
// them, then to run them), and each probe is a run of the target.
type probes struct {
	runs  map[string][]uint32 // by schedule: per beat, a bit per kind of Options.Faults it admits
	order []string            // the schedules in runs, oldest first
}

// maxProbes is how many runs probes remembers: what a campaign of the default size draws.
const maxProbes = 256

func newProbes() *probes { return &probes{runs: map[string][]uint32{}} }

// get returns, for each beat of the run of s without its faults from the n-th on (with the
// workers s runs with), a bit per kind of kinds that it admits.
func (p *probes) get(rn *sim.Runner, kinds []faults.Kind, s faults.Schedule, n int) []uint32 {
	key := s[:n].String()
	for _, f := range s { // the run has a fleet's workers if s has a fleet fault anywhere
		if isFleet(f.Kind) {
			key += " (fleet)"
			break
		}
	}
	if admits, ok := p.runs[key]; ok {
		return admits
	}
	beats := rn.Beats(s, n)
	admits := make([]uint32, len(beats))
	for i, b := range beats {
		for j, k := range kinds {
			if b.Admits(k) {
				admits[i] |= 1 << j
			}
		}
	}
	if len(p.order) == maxProbes {
		delete(p.runs, p.order[0])
		p.order = p.order[1:]
	}
	p.runs[key], p.order = admits, append(p.order, key)
	return admits
}

// NoCase returns what o.Faults (its defaults filled in) asks for (faults.Requests: a whole family,
// or a kind) of which the campaign o describes over rn's target has no case at all: kinds with no
// beat of the golden run where they apply (callback-dup without an asynchronous tool; torn where
// no write would tear otherwise than a plain power loss, unless a whole exhaustive campaign has
// power cases: faults.Decided), or, in Random mode, none drawn. Nothing
// is decided about them, so a campaign that asked for them has not passed them.
func NoCase(rn *sim.Runner, o Options) ([]string, error) {
	o = o.withDefaults()
	seq, err := scheduleSeq(rn, o, every)
	if err != nil {
		return nil, err
	}
	seen := map[faults.Kind]bool{}
	for _, s := range seq {
		for _, f := range s {
			seen[f.Kind] = true
		}
	}
	return Undecided(o.Faults, func(k faults.Kind) bool { return seen[k] }, o.Mode == Exhaustive && o.Cases == 0), nil
}

// Undecided returns what kinds asks for (faults.Requests: a whole family, or a kind) of which no
// kind is decided (faults.Decided) by a campaign that has cases of the kinds has reports; whole
// says that the campaign lists every schedule where each kind applies (exhaustive, uncapped).
func Undecided(kinds []faults.Kind, has func(faults.Kind) bool, whole bool) []string {
	var out []string
	names, groups := faults.Requests(kinds)
	for i, g := range groups {
		if !slices.ContainsFunc(g, func(k faults.Kind) bool { return faults.Decided(k, has, whole) }) {
			out = append(out, names[i])
		}
	}
	return out
}
