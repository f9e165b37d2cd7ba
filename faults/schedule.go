package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault is one scheduled fault: a kind, the beat it fires at, and its argument.
//
// A fault fires once, at the first beat numbered Beat or later at which its kind applies (an
// fsyncfail waits for an fsync, a diskfull for a write). Beats are numbered from 0 across the
// whole run, restarts included, so a later fault can land in the recovery of an earlier one.
// A power cut may also be scheduled after the run's end (Beat End, written @end): once the
// last process has exited, before what it wrote without an fsync reached the disk.
type Fault struct {
	Kind  Kind
	Beat  int
	Bytes int64  // DiskFull: the bytes that still fit on the disk
	Mode  string // Torn: "prefix" (the default, written as "") or "garbage"; Power: "subset" or ""
	// Dur is, for Lease, how long the worker is frozen; for DiskFull, how long the disk stays
	// full (0: to the end of the run).
	Dur    time.Duration
	Worker int // Switch: 1 + the worker to switch to; 0 lets the scheduler choose
}

// String returns the text form of f, e.g. "power@17", "diskfull@12:4096+1m", "torn@3:garbage".
func (f Fault) String() string {
	var b strings.Builder
	f.appendTo(&b)
	return b.String()
}

func (f Fault) appendTo(b *strings.Builder) {
	b.WriteString(string(f.Kind))
	b.WriteByte('@')
	if f.Beat == End {
		b.WriteString(endWord)
	} else {
		b.WriteString(strconv.Itoa(f.Beat))
	}
	info, _ := f.Kind.Info()
	switch info.Arg {
	case BytesArg:
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(f.Bytes, 10))
		if info.Lasts && f.Dur > 0 {
			b.WriteByte('+')
			b.WriteString(FormatDuration(f.Dur))
		}
	case ModeArg:
		if f.Mode != "" && f.Mode != info.Modes[0] {
			b.WriteByte(':')
			b.WriteString(f.Mode)
		}
	case DurationArg:
		b.WriteByte('+')
		b.WriteString(FormatDuration(f.Dur))
	case WorkerArg:
		if f.Worker > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(f.Worker - 1))
		}
	}
}

// FormatDuration writes d the shortest way time.ParseDuration reads back: "45s", "2h", "1h30m".
func FormatDuration(d time.Duration) string {
	s := d.String()
	for _, unit := range []string{"h", "m"} {
		s = strings.Replace(s, unit+"0m0s", unit, 1)
		s = strings.Replace(s, unit+"0s", unit, 1)
	}
	return s
}

// Schedule is an ordered list of faults with strictly increasing beats. Its text form is the
// faults' text forms joined by commas ("kill@4,kill@9"); the empty schedule is the golden run.
type Schedule []Fault

// String returns the canonical text form of s; ParseSchedule(s.String()) returns s again.
func (s Schedule) String() string {
	var b strings.Builder
	for i, f := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		f.appendTo(&b)
	}
	return b.String()
}

// MarshalText writes s's text form (String), so that a schedule in JSON is its text.
func (s Schedule) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses ParseSchedule's form.
func (s *Schedule) UnmarshalText(text []byte) error {
	v, err := ParseSchedule(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MustParseSchedule is ParseSchedule for a schedule known to be well formed (a literal): it
// panics on an error.
func MustParseSchedule(text string) Schedule {
	s, err := ParseSchedule(text)
	if err != nil {
		panic("faults: MustParseSchedule: " + err.Error())
	}
	return s
}

// MarshalText writes f's text form (String).
func (f Fault) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText parses the text form of one fault.
func (f *Fault) UnmarshalText(text []byte) error {
	s, err := ParseSchedule(string(text))
	if err != nil {
		return err
	}
	if len(s) != 1 {
		return fmt.Errorf("fault %q: want one fault", text)
	}
	*f = s[0]
	return nil
}

// Validate reports what is wrong with s, if anything: what ParseSchedule would refuse in its
// text form (an unknown kind, beats not strictly increasing, a lease without a duration), or an
// argument its kind does not take.
func (s Schedule) Validate() error {
	back, err := ParseSchedule(s.String())
	if err != nil {
		return err
	}
	if len(back) != len(s) {
		return fmt.Errorf("schedule %q: %d faults written as %d", s, len(s), len(back))
	}
	for i := range s {
		if back[i] != s[i] {
			return fmt.Errorf("schedule %q: fault %d (%+v) has an argument its kind does not take", s, i, s[i])
		}
	}
	return nil
}

// Kinds returns the distinct kinds in s, in order of first appearance.
func (s Schedule) Kinds() []Kind {
	var ks []Kind
	for _, f := range s {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	return ks
}

// SyntaxError reports a malformed schedule, pointing at the offending byte.
type SyntaxError struct {
	Input string // the whole schedule text
	Pos   int    // byte offset of the problem in Input
	Msg   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("schedule %q, column %d: %s", e.Input, e.Pos+1, e.Msg)
}

// Caret returns the input and a second line with a caret under the offending byte, for
// terminals.
func (e *SyntaxError) Caret() string {
	return e.Input + "\n" + strings.Repeat(" ", e.Pos) + "^"
}

// maxBeat bounds beat numbers so that arithmetic on them cannot overflow.
const maxBeat = 1 << 30

// End is the beat of a fault scheduled after the run's end, written @end ("power@end"): it
// fires once the last process has exited, if the run ended that way. Only the kinds whose
// KindInfo.AtEnd says so may be scheduled there. It is greater than every beat a schedule can
// name, so a fault at End comes last, and a run never makes a beat numbered End.
const End = maxBeat + 1

// endWord is how a schedule writes End.
const endWord = "end"

// beatText writes a beat as a schedule does: its number, or "end".
func beatText(beat int) string {
	if beat == End {
		return "@" + endWord
	}
	return "beat " + strconv.Itoa(beat)
}

// maxDur bounds durations (a year of virtual time), for the same reason.
const maxDur = 365 * 24 * time.Hour

// ParseSchedule parses the text form of a schedule: faults separated by commas, each written
// kind@beat, or kind@end after the run's end (power@end, torn@end:garbage: KindInfo.AtEnd),
// with an optional ":arg" (torn@3:garbage, power@5:subset), the argument a kind
// cannot do without (diskfull@12:4096, the bytes that still fit: diskfull@12:0 for none;
// KindInfo.Form), a duration for the kinds that take one (lease@20+45s) or may
// (diskfull@12:4096+1m). Spaces around faults are allowed. The empty string is the empty schedule. Errors are *SyntaxError
// values.
func ParseSchedule(text string) (Schedule, error) {
	var s Schedule
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	pos := 0
	for _, part := range strings.Split(text, ",") {
		lead := len(part) - len(strings.TrimLeft(part, " "))
		f, err := parseFault(text, pos+lead, strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if n := len(s); n > 0 && f.Beat <= s[n-1].Beat {
			msg := fmt.Sprintf("%s is not after %s: faults must be listed in increasing beat order", beatText(f.Beat), beatText(s[n-1].Beat))
			if s[n-1].Beat == End {
				msg = fmt.Sprintf("%s comes after a fault @end: a fault @end is the schedule's last", beatText(f.Beat))
			}
			return nil, &SyntaxError{text, pos + lead + strings.IndexByte(part[lead:], '@') + 1, msg}
		}
		s = append(s, f)
		pos += len(part) + 1
	}
	return s, nil
}

// parseFault parses one fault; at is the offset of part in text, for errors.
func parseFault(text string, at int, part string) (Fault, error) {
	fail := func(off int, format string, args ...any) (Fault, error) {
		off = min(off, len(part))
		return Fault{}, &SyntaxError{text, at + off, fmt.Sprintf(format, args...)}
	}
	if part == "" {
		return fail(0, "empty fault (two commas in a row, or a trailing comma?)")
	}
	atSign := strings.IndexByte(part, '@')
	if atSign < 0 {
		return fail(0, "fault %q has no @beat (write it like power@17)", part)
	}
	kind := Kind(part[:atSign])
	info, ok := kind.Info()
	if !ok {
		return fail(0, "unknown fault kind %q (known: %s)", kind, knownKinds())
	}
	rest := part[atSign+1:]
	off := atSign + 1
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	var beat int
	switch {
	case digits == 0 && strings.HasPrefix(rest, endWord):
		if !info.AtEnd {
			return fail(off, "%s cannot be scheduled @end: after the run's end only a power cut means something (%s)", kind, atEndKinds())
		}
		beat, digits = End, len(endWord)
	case digits == 0:
		return fail(off, "want a beat number after @, or end")
	default:
		var err error
		beat, err = strconv.Atoi(rest[:digits])
		if err != nil || beat > maxBeat {
			return fail(off, "beat %q is too large (at most %d)", rest[:digits], maxBeat)
		}
	}
	f := Fault{Kind: kind, Beat: beat}
	rest, off = rest[digits:], off+digits
	// AtEnd kinds take neither: the beat is a number here.
	if rest == "" && info.Arg == DurationArg {
		return fail(off, "%s wants +DURATION after the beat number, like %s@%d+45s", kind, kind, beat)
	}
	if info.Arg == BytesArg && (rest == "" || rest[0] == '+') {
		return fail(off, "%s wants :BYTES after the beat number, the bytes that still fit, like %s@%d:4096, or %s@%d:0+1m for none for a minute (%s)",
			kind, kind, beat, kind, beat, info.Form())
	}
	if rest == "" {
		return f, nil
	}
	if info.Arg == DurationArg {
		if rest[0] != '+' {
			return fail(off, "%s wants +DURATION after the beat number, like %s@%d+45s", kind, kind, beat)
		}
		d, err := time.ParseDuration(rest[1:])
		if err != nil || d <= 0 || d > maxDur {
			return fail(off+1, "%s wants a positive duration such as 45s or 2h, not %q", kind, rest[1:])
		}
		f.Dur = d
		return f, nil
	}
	if info.Lasts {
		if plus := strings.IndexByte(rest, '+'); plus >= 0 {
			d, err := time.ParseDuration(rest[plus+1:])
			if err != nil || d <= 0 || d > maxDur {
				return fail(off+plus+1, "%s wants a positive duration after +, such as 1m or 2h, not %q", kind, rest[plus+1:])
			}
			f.Dur, rest = d, rest[:plus]
		}
	}
	if rest[0] != ':' {
		return fail(off, "unexpected %q after the beat number", rest[:1])
	}
	arg := rest[1:]
	off++
	switch info.Arg {
	case NoArg:
		return fail(off-1, "%s takes no argument", kind)
	case WorkerArg:
		w, err := strconv.Atoi(arg)
		if err != nil || w < 0 || w > 1000 {
			return fail(off, "%s wants a worker number, not %q", kind, arg)
		}
		f.Worker = w + 1
	case BytesArg:
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < 0 {
			return fail(off, "%s wants a byte count, not %q", kind, arg)
		}
		f.Bytes = n
	case ModeArg:
		for i, m := range info.Modes {
			if m == arg {
				if i > 0 {
					f.Mode = m
				}
				return f, nil
			}
		}
		return fail(off, "%s mode %q is not one of %s", kind, arg, strings.Join(info.Modes, ", "))
	}
	return f, nil
}
