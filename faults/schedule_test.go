package faults_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/faults"
	"pgregory.net/rapid"
)

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		in, canon string
		want      faults.Schedule
	}{
		{"", "", nil},
		{"power@17", "power@17", faults.Schedule{{Kind: faults.Power, Beat: 17}}},
		{"kill@4,kill@9", "kill@4,kill@9", faults.Schedule{{Kind: faults.Kill, Beat: 4}, {Kind: faults.Kill, Beat: 9}}},
		{"diskfull@12:4096", "diskfull@12:4096", faults.Schedule{{Kind: faults.DiskFull, Beat: 12, Bytes: 4096}}},
		{"diskfull@12:0", "diskfull@12:0", faults.Schedule{{Kind: faults.DiskFull, Beat: 12}}},
		{"diskfull@12:4096+1m", "diskfull@12:4096+1m", faults.Schedule{{Kind: faults.DiskFull, Beat: 12, Bytes: 4096, Dur: time.Minute}}},
		{"diskfull@12:0+90s", "diskfull@12:0+1m30s", faults.Schedule{{Kind: faults.DiskFull, Beat: 12, Dur: 90 * time.Second}}},
		{"power@5:subset,power@9:fsynced", "power@5:subset,power@9", faults.Schedule{{Kind: faults.Power, Beat: 5, Mode: "subset"}, {Kind: faults.Power, Beat: 9}}},
		{"torn@3:garbage, fsyncfail@8", "torn@3:garbage,fsyncfail@8", faults.Schedule{{Kind: faults.Torn, Beat: 3, Mode: "garbage"}, {Kind: faults.FsyncFail, Beat: 8}}},
		{"torn@3:prefix", "torn@3", faults.Schedule{{Kind: faults.Torn, Beat: 3}}},
		{"corrupt@0", "corrupt@0", faults.Schedule{{Kind: faults.Corrupt, Beat: 0}}},
		{"lease@20+45s", "lease@20+45s", faults.Schedule{{Kind: faults.Lease, Beat: 20, Dur: 45 * time.Second}}},
		{"lease@3+120m,deploy@9", "lease@3+2h,deploy@9", faults.Schedule{{Kind: faults.Lease, Beat: 3, Dur: 2 * time.Hour}, {Kind: faults.Deploy, Beat: 9}}},
		{"lease@3+90s", "lease@3+1m30s", faults.Schedule{{Kind: faults.Lease, Beat: 3, Dur: 90 * time.Second}}},
		{"switch@4,switch@6:1", "switch@4,switch@6:1", faults.Schedule{{Kind: faults.Switch, Beat: 4}, {Kind: faults.Switch, Beat: 6, Worker: 2}}},
		{"tool-ambiguous@7,model-hang@8", "tool-ambiguous@7,model-hang@8", faults.Schedule{{Kind: faults.ToolAmbiguous, Beat: 7}, {Kind: faults.ModelHang, Beat: 8}}},
		{"power@end", "power@end", faults.Schedule{{Kind: faults.Power, Beat: faults.End}}},
		{"kill@3, torn@end:garbage", "kill@3,torn@end:garbage", faults.Schedule{{Kind: faults.Kill, Beat: 3}, {Kind: faults.Torn, Beat: faults.End, Mode: "garbage"}}},
		{"power@end:subset", "power@end:subset", faults.Schedule{{Kind: faults.Power, Beat: faults.End, Mode: "subset"}}},
	} {
		got, err := faults.ParseSchedule(tc.in)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", tc.in, err)
			continue
		}
		if len(got) != 0 || len(tc.want) != 0 {
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseSchedule(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		}
		if got.String() != tc.canon {
			t.Errorf("ParseSchedule(%q).String() = %q, want %q", tc.in, got.String(), tc.canon)
		}
	}
}

func TestParseScheduleErrorsPointAtTheProblem(t *testing.T) {
	for _, tc := range []struct {
		in   string
		col  int
		says string
	}{
		{"powr@17", 1, `unknown fault kind "powr"`},
		{"kill@4,powr@9", 8, `unknown fault kind "powr"`},
		{"kill@", 6, "want a beat number"},
		{"kill@x", 6, "want a beat number"},
		{"kill", 1, "has no @beat"},
		{"kill@4,", 8, "empty fault"},
		{"kill@4,,kill@5", 8, "empty fault"},
		{"kill@9,kill@4", 13, "beat 4 is not after beat 9"},
		{"kill@4:1", 7, "kill takes no argument"},
		{"diskfull@3:lots", 12, "wants a byte count"},
		{"diskfull@3:-1", 12, "wants a byte count"},
		{"torn@3:sideways", 8, `mode "sideways" is not one of prefix, garbage`},
		{"kill@4x", 7, `unexpected "x"`},
		{"kill@99999999999", 6, "too large"},
		{"lease@20", 9, "lease wants +DURATION"},
		{"lease@20:45s", 9, "lease wants +DURATION"},
		{"lease@20+soon", 10, "positive duration"},
		{"lease@20+-5s", 10, "positive duration"},
		{"switch@4:x", 10, "worker number"},
		{"kill@4+5s", 7, `unexpected "+"`},
		{"diskfull@3:10+soon", 15, "diskfull wants a positive duration"},
		{"kill@1,diskfull@3:10+0s", 22, "diskfull wants a positive duration"},
		{"diskfull@3+", 11, "diskfull wants :BYTES after the beat number"},
		// Without its byte count a full disk is refused, as a lease without its duration is,
		// rather than taken for diskfull@3:0: the error says the form.
		{"diskfull@3", 11, "diskfull wants :BYTES after the beat number, the bytes that still fit, like diskfull@3:4096, or diskfull@3:0+1m for none for a minute (diskfull@N:BYTES[+DURATION])"},
		{"diskfull@3+1m", 11, "diskfull wants :BYTES after the beat number"},
		{"kill@1,diskfull@12", 19, "diskfull wants :BYTES"},
		{"diskfull@3:x+1m", 12, "wants a byte count"},
		{"diskfull@3:10+1m+1m", 15, "diskfull wants a positive duration"},
		{"power@3:most", 9, `power mode "most" is not one of fsynced, subset`},
		{"power@3+1m", 8, `unexpected "+"`},
		{"kill@end", 6, "kill cannot be scheduled @end: after the run's end only a power cut means something (power@end, torn@end)"},
		{"diskfull@end:10", 10, "diskfull cannot be scheduled @end"},
		{"power@end,kill@5", 16, "beat 5 comes after a fault @end: a fault @end is the schedule's last"},
		{"power@end,torn@end", 16, "@end comes after a fault @end"},
		{"power@ending", 10, `unexpected "i"`},
		{"power@", 7, "want a beat number after @, or end"},
	} {
		_, err := faults.ParseSchedule(tc.in)
		var se *faults.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseSchedule(%q) = %v, want a *SyntaxError", tc.in, err)
			continue
		}
		if se.Pos+1 != tc.col || !strings.Contains(se.Msg, tc.says) {
			t.Errorf("ParseSchedule(%q): column %d %q, want column %d saying %q", tc.in, se.Pos+1, se.Msg, tc.col, tc.says)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseSchedule(%q): error spans lines: %q", tc.in, err)
		}
	}
}

// FuzzParseSchedule checks that the parser never panics and that whatever it accepts
// round-trips through its canonical text.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"power@17", "kill@4,kill@9", "diskfull@12:4096", "torn@3:garbage", " kill@1 , power@2", "corrupt@0", "x@", "@@", "kill@4,,", "diskfull@1:", "lease@2+45s", "lease@2+1h30m", "switch@3:1", "model-hang@4", "diskfull@3:7+1m", "diskfull@3+2h", "power@4:subset", "power@end", "kill@2,torn@end:garbage", "kill@end"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := faults.ParseSchedule(in)
		if err != nil {
			var se *faults.SyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(in) {
				t.Fatalf("ParseSchedule(%q): bad error %v", in, err)
			}
			return
		}
		canon := s.String()
		again, err := faults.ParseSchedule(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, in, err)
		}
		if again.String() != canon || len(again) != len(s) {
			t.Fatalf("round trip: %q -> %q -> %q", in, canon, again.String())
		}
		for i := range s {
			if s[i] != again[i] {
				t.Fatalf("round trip changed fault %d: %#v -> %#v", i, s[i], again[i])
			}
		}
	})
}

// Every kind's written form (as chaoskit faults lists it) names its optional parts.
func TestKindForms(t *testing.T) {
	want := map[faults.Kind]string{
		faults.Kill:     "kill@N",
		faults.Power:    "power@N[:subset]",
		faults.Torn:     "torn@N[:garbage]",
		faults.DiskFull: "diskfull@N:BYTES[+DURATION]",
		faults.Lease:    "lease@N+DURATION",
		faults.Switch:   "switch@N[:WORKER]",
	}
	for _, k := range faults.Kinds() {
		if w, ok := want[k.Kind]; ok && k.Form() != w {
			t.Errorf("%s: Form() = %q, want %q", k.Kind, k.Form(), w)
		}
	}
}

func TestParseKinds(t *testing.T) {
	ks, err := faults.ParseKinds("kill, power,kill")
	if err != nil || len(ks) != 2 || ks[0] != faults.Kill || ks[1] != faults.Power {
		t.Fatalf("ParseKinds = %v, %v", ks, err)
	}
	if ks, _ := faults.ParseKinds("storage"); len(ks) != 6 {
		t.Fatalf("storage = %v, want the six storage kinds", ks)
	}
	if ks, _ := faults.ParseKinds("tool,model"); len(ks) != 10 || ks[0] != faults.ToolTransient {
		t.Fatalf("tool,model = %v", ks)
	}
	if ks, _ := faults.ParseKinds("all"); len(ks) != len(faults.Kinds()) {
		t.Fatalf("all = %v", ks)
	}
	if _, err := faults.ParseKinds("kill,meteor"); err == nil || !strings.Contains(err.Error(), `unknown fault "meteor"`) {
		t.Fatalf("ParseKinds(kill,meteor) = %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		s    faults.Schedule
		want string
	}{
		{faults.Schedule{{Kind: faults.Kill, Beat: 4}, {Kind: faults.Lease, Beat: 9, Dur: time.Minute}}, ""},
		{faults.Schedule{{Kind: faults.Kill, Beat: 40}, {Kind: faults.Kill, Beat: 10}}, "beat 10 is not after beat 40"},
		{faults.Schedule{{Kind: faults.Lease, Beat: 3}}, "positive duration"},
		{faults.Schedule{{Kind: "meteor", Beat: 3}}, `unknown fault kind "meteor"`},
		{faults.Schedule{{Kind: faults.Kill, Beat: 3, Bytes: 7}}, "an argument its kind does not take"},
		{faults.Schedule{{Kind: faults.DiskFull, Beat: 3, Bytes: 7, Dur: time.Minute}, {Kind: faults.Power, Beat: 4, Mode: "subset"}}, ""},
		{faults.Schedule{{Kind: faults.Kill, Beat: 3, Dur: time.Minute}}, "an argument its kind does not take"},
		{faults.Schedule{{Kind: faults.Power, Beat: 3, Mode: "garbage"}}, `mode "garbage" is not one of fsynced, subset`},
	} {
		err := tc.s.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want %q", tc.s, err, tc.want)
		}
	}
}

// A whole family is one request, decided once any of its kinds has a case, and every family one
// request, all; a kind named alone is a request of its own.
func TestRequests(t *testing.T) {
	for list, want := range map[string]string{
		"storage":               "storage",
		"kill,tool":             "kill tool",
		"torn":                  "torn",
		"kill,power":            "kill power",
		"all":                   "all",
		"storage,fleet,tool":    "storage fleet tool",
		"tool-transient,kill":   "tool-transient kill",
		"fleet,kill,model-hang": "fleet kill model-hang",
	} {
		kinds, err := faults.ParseKinds(list)
		if err != nil {
			t.Fatal(err)
		}
		names, groups := faults.Requests(kinds)
		if got := strings.Join(names, " "); got != want || len(groups) != len(names) {
			t.Errorf("Requests(%s) = %s (%d groups), want %s", list, got, len(groups), want)
		}
	}
}

// A kind with a case is decided; torn without one is decided only beside power cases, which are
// what its cases would be at a beat where nothing could tear, in a campaign that lists every
// case (whole): one capped or drawn at random may have left torn cases out; no other kind
// stands for another.
func TestDecided(t *testing.T) {
	for _, tc := range []struct {
		kind  faults.Kind
		has   []faults.Kind
		whole bool
		want  bool
	}{
		{faults.Torn, []faults.Kind{faults.Torn}, false, true},
		{faults.Torn, []faults.Kind{faults.Power}, true, true},
		{faults.Torn, []faults.Kind{faults.Power}, false, false},
		{faults.Torn, []faults.Kind{faults.Kill}, true, false},
		{faults.Torn, nil, true, false},
		{faults.CallbackDup, []faults.Kind{faults.Power, faults.ToolTransient}, true, false},
		{faults.Power, []faults.Kind{faults.Kill}, true, false},
	} {
		has := func(k faults.Kind) bool { return slices.Contains(tc.has, k) }
		if got := faults.Decided(tc.kind, has, tc.whole); got != tc.want {
			t.Errorf("Decided(%s) with cases of %v, whole %v = %v, want %v", tc.kind, tc.has, tc.whole, got, tc.want)
		}
	}
}

// Every schedule, @end included, is written in a text form that parses back to it: a rapid
// property over schedules of every kind with the arguments each takes.
func TestScheduleTextRoundTrips(t *testing.T) {
	kinds := faults.Kinds()
	rapid.Check(t, func(t *rapid.T) {
		var s faults.Schedule
		beat := 0
		for i, n := 0, rapid.IntRange(0, 5).Draw(t, "faults"); i < n; i++ {
			info := kinds[rapid.IntRange(0, len(kinds)-1).Draw(t, "kind")]
			beat += rapid.IntRange(0, 1000).Draw(t, "gap")
			f := faults.Fault{Kind: info.Kind, Beat: beat}
			if info.AtEnd && rapid.Bool().Draw(t, "at end") {
				f.Beat, i = faults.End, n // the last
			}
			beat++
			switch info.Arg {
			case faults.BytesArg:
				f.Bytes = rapid.Int64Range(0, 1<<40).Draw(t, "bytes")
				if rapid.Bool().Draw(t, "lasts") {
					f.Dur = time.Duration(rapid.IntRange(1, 3600).Draw(t, "seconds")) * time.Second
				}
			case faults.ModeArg:
				if m := rapid.IntRange(0, len(info.Modes)-1).Draw(t, "mode"); m > 0 {
					f.Mode = info.Modes[m]
				}
			case faults.DurationArg:
				f.Dur = time.Duration(rapid.IntRange(1, 3600).Draw(t, "seconds")) * time.Second
			case faults.WorkerArg:
				f.Worker = rapid.IntRange(0, 9).Draw(t, "worker")
			}
			s = append(s, f)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		back, err := faults.ParseSchedule(s.String())
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !reflect.DeepEqual(back, s) && (len(back) != 0 || len(s) != 0) {
			t.Fatalf("%q parsed back as %#v, want %#v", s, back, s)
		}
	})
}
