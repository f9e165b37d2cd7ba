package campaign

import (
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/faults"
)

// ReplayCommand returns the chaoskit command line that replays one case: the named target under
// schedule s with seed. It is the default replay command of a campaign's cases.
func ReplayCommand(target string, seed uint64, s faults.Schedule) string {
	return fmt.Sprintf("chaoskit replay --target %s --seed %d --schedule %s", ShellQuote(target), seed, ShellQuote(s.String()))
}

// ShellQuote quotes s for a POSIX shell: in single quotes, unless it is a plain word (a
// schedule, with its "@", never is).
func ShellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("/._-", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
