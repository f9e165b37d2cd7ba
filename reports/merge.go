package reports

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Shard names one part of a campaign split N ways: shard I of N (1 ≤ I ≤ N) runs the cases whose
// Index is I-1 modulo N. The zero Shard is the whole campaign.
type Shard struct{ I, N int }

// ParseShard parses the text form of a shard, "I/N"; the empty string is the whole campaign.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n || n > 1_000_000 {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 1 ≤ I ≤ N, like 1/4", s)
	}
	return Shard{i, n}, nil
}

// String returns the text form of s, "I/N", or "" for the whole campaign.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Holds reports whether the case at index belongs to the shard.
func (s Shard) Holds(index int) bool { return s.N == 0 || index%s.N == s.I-1 }

// Merge combines the reports of every shard of one campaign into the report of the whole
// campaign, as an unsharded run writes it: its cases in the order of Options.Targets, then of
// Index, and its summary computed afresh. Every field but the wall-clock ones comes out the same
// as the unsharded run's; DurationMs is the longest shard's, as shards run side by side.
//
// When a shard's cases come from a Source (see LoadStream), so do the merged report's: they are
// merged as they stream, in one pass over the shards per reading, which holds a case per shard,
// and Merge reads them once to summarise them (and to take their DurationMs, which LoadStream
// sets once it has read the cases through). Shards whose cases are not in campaign order, or
// name targets their options do not list (as no chaoskit writes), are merged in memory.
//
// Merge refuses reports that are not shards, shards of different campaigns (a different seed or
// different options), shards whose targets ran other code (their files' Command.Digest differs:
// a shard of a pull request beside one of main), and a set of shards with one missing or
// repeated.
func Merge(shards ...*Report) (*Report, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("no reports to merge")
	}
	first := shards[0]
	base := first.Options
	base.Shard = ""
	seen := map[int]bool{}
	var n int
	for _, r := range shards {
		sh, err := ParseShard(r.Options.Shard)
		switch {
		case err != nil:
			return nil, err
		case sh.N == 0:
			return nil, fmt.Errorf("a report of a whole campaign is not a shard to merge")
		case n != 0 && sh.N != n:
			return nil, fmt.Errorf("shard %s and shard %s split the campaign differently", first.Options.Shard, r.Options.Shard)
		case seen[sh.I]:
			return nil, fmt.Errorf("shard %s given twice", sh)
		}
		n, seen[sh.I] = sh.N, true
		if d := first.OtherCampaign(r); d != "" {
			return nil, fmt.Errorf("shard %s is of another campaign than shard %s: %s", r.Options.Shard, first.Options.Shard, d)
		}
		if d := first.OtherCode(r); d != "" {
			return nil, fmt.Errorf("shard %s ran other code than shard %s: %s: merge the shards of one commit", r.Options.Shard, first.Options.Shard, d)
		}
	}
	for i := 1; i <= n; i++ {
		if !seen[i] {
			return nil, fmt.Errorf("shard %s is missing", Shard{i, n})
		}
	}
	out := &Report{Schema: first.Schema, Seed: first.Seed, Options: base}
	golden, schedules := map[string]int{}, map[string]int{}
	for _, r := range shards {
		for _, t := range r.Summary.Targets {
			golden[t.Target], schedules[t.Target] = t.GoldenBeats, max(schedules[t.Target], t.Schedules)
		}
	}
	// What the shards' summaries know that their cases do not: how many schedules each
	// target's whole list holds.
	summarize := func() error {
		err := out.Summarize(golden)
		for i := range out.Summary.Targets {
			out.Summary.Targets[i].Schedules = schedules[out.Summary.Targets[i].Target]
		}
		return err
	}
	if slices.ContainsFunc(shards, func(r *Report) bool { return r.Source != nil }) {
		out.Source = mergeSources(shards, base.Targets)
		err := summarize()
		if err == nil {
			for _, r := range shards {
				out.DurationMs = max(out.DurationMs, r.DurationMs)
			}
			return out, nil
		}
		if !errors.Is(err, errOutOfOrder) {
			return nil, err
		}
		// Shards of another chaoskit, or targets the options do not list: sort in memory.
		out.Source = nil
	}
	for _, r := range shards {
		if err := r.Each(func(c *Case) error { out.Cases = append(out.Cases, *c); return nil }); err != nil {
			return nil, err
		}
		out.DurationMs = max(out.DurationMs, r.DurationMs)
	}
	out.SortCases()
	summarize()
	return out, nil
}

// errOutOfOrder stops a merge of shards as they stream when the cases of a shard are not in the
// order of SortCases over the targets of the campaign's options, which that merge relies on.
var errOutOfOrder = errors.New("a shard's cases are not in campaign order")

// mergeSources returns a Source that yields the cases of shards, each in the order SortCases
// gives over targets, merged into that order: a k-way merge that holds a case per shard. It
// yields errOutOfOrder, after the cases before, if a shard's cases are not in that order or
// name a target not in targets.
func mergeSources(shards []*Report, targets []string) func(fn func(*Case) error) error {
	rank := map[string]int{}
	for _, t := range targets {
		if _, ok := rank[t]; !ok {
			rank[t] = len(rank)
		}
	}
	type key struct{ rank, index int }
	return func(fn func(*Case) error) error {
		type head struct {
			c    *Case
			key  key
			next func() (*Case, bool)
			err  *error
		}
		var heads []*head
		var stops []func()
		defer func() {
			for _, stop := range stops {
				stop()
			}
		}()
		// advance reads h's next case, checking its order.
		advance := func(h *head) error {
			c, ok := h.next()
			if !ok {
				h.c = nil
				return *h.err
			}
			r, known := rank[c.Target]
			k := key{r, c.Index}
			if !known || h.c != nil && (k.rank < h.key.rank || k.rank == h.key.rank && k.index < h.key.index) {
				return errOutOfOrder
			}
			h.c, h.key = c, k
			return nil
		}
		for _, r := range shards {
			h := &head{err: new(error)}
			next, stop := iter.Pull(func(yield func(*Case) bool) {
				*h.err = r.Each(func(c *Case) error {
					if !yield(c) {
						return errStopped
					}
					return nil
				})
			})
			h.next = next
			stops = append(stops, stop)
			heads = append(heads, h)
			if err := advance(h); err != nil {
				return err
			}
		}
		for {
			var least *head // the first shard's on a tie, as SortCases keeps it
			for _, h := range heads {
				if h.c != nil && (least == nil || h.key.rank < least.key.rank || h.key.rank == least.key.rank && h.key.index < least.key.index) {
					least = h
				}
			}
			if least == nil {
				return nil
			}
			if err := fn(least.c); err != nil {
				return err
			}
			if err := advance(least); err != nil {
				return err
			}
		}
	}
}

// errStopped ends the reading of a shard's cases that the merge no longer needs.
var errStopped = errors.New("stopped")

// OtherCampaign says how other is a report of another campaign than r (other targets or
// commands, fault kinds, mode, case count, restart policy, filesystem model or seed), naming the first
// difference, e.g. `seed 2, not 1`; it returns "" for reports of the same campaign, shards of it
// included.
func (r *Report) OtherCampaign(other *Report) string {
	a, b := r.Options, other.Options
	a.Shard, b.Shard = "", ""
	words := func(list []string) string { return "[" + strings.Join(list, " ") + "]" }
	switch {
	case other.Schema != r.Schema:
		return fmt.Sprintf("schema %s, not %s", other.Schema, r.Schema)
	case !slices.Equal(b.Targets, a.Targets):
		return fmt.Sprintf("targets %s, not %s", words(b.Targets), words(a.Targets))
	case !slices.Equal(b.Faults, a.Faults):
		return fmt.Sprintf("fault kinds %s, not %s", words(b.Faults), words(a.Faults))
	case b.Mode != a.Mode:
		return fmt.Sprintf("mode %s, not %s", b.Mode, a.Mode)
	case b.Cases != a.Cases:
		return fmt.Sprintf("%s per target, not %d", Count(b.Cases, "case"), a.Cases)
	case b.Depth != a.Depth:
		return fmt.Sprintf("depth %d, not %d", max(1, b.Depth), max(1, a.Depth))
	case b.Restart != a.Restart:
		return fmt.Sprintf("restart policy %q, not %q", b.Restart, a.Restart)
	case b.RestartBackoff != a.RestartBackoff:
		return fmt.Sprintf("restart back-off %q, not %q", b.RestartBackoff, a.RestartBackoff)
	case b.Grace != a.Grace:
		return fmt.Sprintf("grace period %s, not %s", cmp.Or(b.Grace, "30s"), cmp.Or(a.Grace, "30s"))
	case b.FSModel != a.FSModel:
		return fmt.Sprintf("filesystem model %s, not %s", fsModelName(b.FSModel), fsModelName(a.FSModel))
	case other.Seed != r.Seed:
		return fmt.Sprintf("seed %d, not %d", other.Seed, r.Seed)
	}
	for i := range a.Commands {
		x, y := a.Commands[i], b.Commands[i]
		// A new version of the same target, or the same target in another checkout, is the same
		// campaign: a baseline compares them. (Merge refuses shards of other code: OtherCode.)
		x.Digest, y.Digest, x.Dir, y.Dir = "", "", "", ""
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("target %s runs %q, not %q", a.Commands[i].Name, strings.Join(b.Commands[i].Argv, " "), strings.Join(a.Commands[i].Argv, " "))
		}
	}
	return ""
}

// OtherCode says how the commands of other, a report of the same campaign as r (OtherCampaign),
// ran other code than r's, naming the first whose files' digest differs, e.g. `target app: its
// files' digest 3f2a9c1e07b4, not 9d41e6a0c2f8`; it returns "" when they ran the same, or when a
// digest is missing (a report written before commands had one). A checkout elsewhere is the
// same code: the working directory is not compared.
func (r *Report) OtherCode(other *Report) string {
	a, b := r.Options.Commands, other.Options.Commands
	for i := range min(len(a), len(b)) {
		x, y := a[i].Digest, b[i].Digest
		if x != "" && y != "" && x != y {
			return fmt.Sprintf("target %s: its files' digest %.12s, not %.12s", a[i].Name, y, x)
		}
	}
	return ""
}

// fsModelName names a report's filesystem model, "" being posix.
func fsModelName(m string) string {
	if m == "" {
		return "posix"
	}
	return m
}

// SortCases puts r's cases in campaign order: by target, in the order of Options.Targets (then
// of first appearance, for a target not listed there), then by Index. A case's position in a
// report then does not depend on the order in which the cases finished.
func (r *Report) SortCases() {
	rank := map[string]int{}
	for _, t := range r.Options.Targets {
		if _, ok := rank[t]; !ok {
			rank[t] = len(rank)
		}
	}
	for _, c := range r.Cases {
		if _, ok := rank[c.Target]; !ok {
			rank[c.Target] = len(rank)
		}
	}
	slices.SortStableFunc(r.Cases, func(a, b Case) int {
		return cmp.Or(cmp.Compare(rank[a.Target], rank[b.Target]), cmp.Compare(a.Index, b.Index))
	})
}
