package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/sim"
)

// multiFlag collects a flag given several times, each value whole (commas and all).
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, " ") }

func (m *multiFlag) Set(s string) error {
	*m = append(*m, s)
	return nil
}

// execFlags are the flags that make commands targets: --exec, repeatable, and the options that
// apply to every command given (--name pairs with the --exec in the same place).
type execFlags struct {
	exec, names, tools, ignore, env, http    multiFlag
	state, disk, beats, dir, clock, cassette *string
	// upgrade and upgradeState are the next versions' commands and state commands, each paired
	// with the --exec in the same place.
	upgrade, upgradeState multiFlag
}

// execParams are the flags of execFlags, in the order error messages name them.
var execParams = []string{"exec", "name", "tool", "state", "ignore", "disk", "beats", "clock", "dir", "env", "cassette", "http", "upgrade-exec", "upgrade-state"}

func addExecFlags(fs *flag.FlagSet) *execFlags {
	f := &execFlags{}
	fs.Var(&f.exec, "exec", "a command to run as a target, e.g. 'python3 app.py' (repeatable; see PROTOCOL.md): split into words as a shell would, but run without one, so no pipes, redirections or variables (for those, 'sh -c ...')")
	fs.Var(&f.names, "name", "the name of the --exec target in the same place (default: its command line)")
	fs.Var(&f.tools, "tool", "a tool the commands call, through their client or over MCP at $CHAOSKIT_MCP_URL: NAME=CONTRACT[,latency=DUR][,key-ttl=DUR][,fenced][,ordered][,async=DUR][,outcome=TEXT], CONTRACT one of read-only, not-idempotent, idempotent-by-key (client only), idempotent-by-arg:$.PATH or idempotent-by-meta:NAME (repeatable)")
	f.cassette = fs.String("cassette", "", "a cassette of the model's answers (adapters/provider/CASSETTE.md): the commands get an OpenAI- and Anthropic-compatible API answering from it at $OPENAI_BASE_URL and $ANTHROPIC_BASE_URL")
	fs.Var(&f.http, "http", "a REST service double the commands call under $CHAOSKIT_HTTP_URL: 'METHOD PATH=CONTRACT[,name=NAME][,status=CODE]', CONTRACT one of read-only, not-idempotent, idempotent-by-header:NAME or idempotent-by-body:$.PATH (repeatable)")
	f.state = fs.String("state", "", "a command that prints the commands' durable state as JSON, run on a copy of the state directory")
	fs.Var(&f.ignore, "ignore", "a JSON path left out when results and states are compared, e.g. '$.checkpoints[*].ts' (repeatable)")
	f.disk = fs.String("disk", "plain", "how the state directory reaches chaoskit's fault disk: plain (a copy: kill only) or fuse (a mount: every storage fault)")
	f.beats = fs.String("beats", "all", "with --disk fuse, which of a command's doings are beats: all (requests and file operations) or calls (requests only)")
	f.clock = fs.String("clock", "virtual", "the clock the commands' own sleeps, timeouts and clock reads see: virtual (trapped: they wait in virtual time and return at once) or wall (the machine's)")
	f.dir = fs.String("dir", "", "the commands' working directory (default: the current one)")
	fs.Var(&f.upgrade, "upgrade-exec", "the command of the --exec target's next version, which an upgrade fault (--faults upgrade) deploys mid-run: every process after it runs this command, on the state the old version left (with several --exec, one each, in the same order)")
	fs.Var(&f.upgradeState, "upgrade-state", "the --upgrade-exec version's state command (default: --state; with several --upgrade-exec, one each, in the same order)")
	fs.Var(&f.env, "env", "KEY=VALUE added to the commands' environment, ${CHAOSKIT_...} in VALUE replaced by the process's own, e.g. 'PAYMENTS_URL=${CHAOSKIT_HTTP_URL}' (repeatable)")
	return f
}

// commands returns the commands the flags describe, checked; set holds the flags given
// (setFlags).
func (f *execFlags) commands(set map[string]bool) ([]reports.Command, error) {
	if len(f.exec) == 0 {
		for _, name := range execParams[1:] {
			if set[name] {
				return nil, usagef("--%s describes an --exec target, and there is none", name)
			}
		}
		return nil, nil
	}
	if len(f.names) > len(f.exec) {
		return nil, usagef("%d --name for %d --exec", len(f.names), len(f.exec))
	}
	if len(f.upgrade) == 0 && set["upgrade-state"] {
		return nil, usagef("--upgrade-state is the state command of the --upgrade-exec version, and there is none")
	}
	if n := len(f.upgrade); n > 0 && n != len(f.exec) {
		return nil, usagef("%d --upgrade-exec for %d --exec: give the next version of each --exec, in the same order", n, len(f.exec))
	}
	if n := len(f.upgradeState); n > 0 && n != len(f.upgrade) {
		return nil, usagef("%d --upgrade-state for %d --upgrade-exec: give the state command of each, in the same order", n, len(f.upgrade))
	}
	for _, e := range f.env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return nil, usagef("--env %q: want KEY=VALUE", e)
		}
	}
	var out []reports.Command
	for i, line := range f.exec {
		argv, err := splitCommand(line)
		if err != nil {
			return nil, usagef("--exec %q: %v", line, err)
		}
		dir := *f.dir
		if dir == "" || !filepath.IsAbs(dir) { // recorded absolute, so that a replay runs it from anywhere
			cwd, err := os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("--exec: finding the current directory: %w", err)
			}
			dir = filepath.Join(cwd, dir)
		}
		cmd := reports.Command{Argv: argv, Dir: dir, Env: f.env, Tools: f.tools, Ignore: f.ignore, Disk: *f.disk, HTTP: f.http}
		if *f.cassette != "" {
			if cmd.Cassette, err = filepath.Abs(*f.cassette); err != nil {
				return nil, fmt.Errorf("--cassette: %w", err)
			}
		}
		if *f.beats != string(process.AllBeats) {
			cmd.Beats = *f.beats
		}
		if *f.clock != string(process.VirtualClock) {
			cmd.Clock = *f.clock
		}
		if *f.state != "" {
			if cmd.State, err = splitCommand(*f.state); err != nil {
				return nil, usagef("--state %q: %v", *f.state, err)
			}
		}
		if i < len(f.upgrade) {
			if cmd.Upgrade, err = splitCommand(f.upgrade[i]); err != nil {
				return nil, usagef("--upgrade-exec %q: %v", f.upgrade[i], err)
			}
		}
		if i < len(f.upgradeState) {
			if cmd.UpgradeState, err = splitCommand(f.upgradeState[i]); err != nil {
				return nil, usagef("--upgrade-state %q: %v", f.upgradeState[i], err)
			}
		}
		cmd.Name = process.Target{Argv: argv}.Name()
		if i < len(f.names) {
			cmd.Name = f.names[i]
		}
		cmd.Digest = commandDigest(cmd)
		if _, err := execTarget(cmd); err != nil {
			return nil, err
		}
		out = append(out, cmd)
	}
	return out, nil
}

// execTarget returns the campaign target that runs cmd, or a usage error naming what is wrong
// with it.
func execTarget(cmd reports.Command) (campaign.Target, error) {
	t := process.Target{Argv: cmd.Argv, Dir: cmd.Dir, Env: cmd.Env, StateArgv: cmd.State, Ignore: cmd.Ignore, Disk: process.Disk(cmd.Disk), Beats: process.Beats(cmd.Beats), Clock: process.Clock(cmd.Clock)}
	for _, spec := range cmd.Tools {
		tool, err := process.ParseTool(spec)
		if err != nil {
			return campaign.Target{}, usagef("--tool: %v", err)
		}
		if slices.ContainsFunc(t.ToolList, func(u harness.Tool) bool { return u.Name == tool.Name }) {
			return campaign.Target{}, usagef("--tool %s: declared twice", tool.Name)
		}
		t.ToolList = append(t.ToolList, tool)
		served, ok, err := process.ServedTool(spec)
		if err != nil {
			return campaign.Target{}, usagef("--tool: %v", err)
		}
		if ok {
			t.Services.Tools = append(t.Services.Tools, served)
		}
	}
	for _, spec := range cmd.HTTP {
		route, err := rest.ParseRoute(spec)
		if err != nil {
			return campaign.Target{}, usagef("--http: %v", err)
		}
		if slices.ContainsFunc(t.Services.Routes, func(r rest.Route) bool { return r.Method == route.Method && r.Path == route.Path }) {
			return campaign.Target{}, usagef("--http %s %s: declared twice", route.Method, route.Path)
		}
		t.Services.Routes = append(t.Services.Routes, route)
	}
	if cmd.Cassette != "" {
		c, err := provider.Load(cmd.Cassette)
		if err != nil {
			return campaign.Target{}, usagef("--cassette: %v", err)
		}
		t.Services.Cassette = c
	}
	if err := t.Validate(); err != nil {
		return campaign.Target{}, usagef("--exec %s: %v", strings.Join(cmd.Argv, " "), err)
	}
	ct := campaign.Target{
		Name:    cmd.Name,
		New:     harness.Fresh(t),
		Command: &cmd,
		Repro:   func(seed uint64, s faults.Schedule) string { return replayExec(cmd, seed, s) },
	}
	if len(cmd.Upgrade) > 0 { // the next version: the same target but for its command lines
		t.Argv = cmd.Upgrade
		if len(cmd.UpgradeState) > 0 {
			t.StateArgv = cmd.UpgradeState
		}
		if err := t.Validate(); err != nil {
			return campaign.Target{}, usagef("--upgrade-exec %s: %v", strings.Join(cmd.Upgrade, " "), err)
		}
		ct.NextVersion = harness.Fresh(t)
	}
	return ct, nil
}

// beatsAdvice adds to err, a refusal of a target as not deterministic, what lifts it for a
// command: requests made from one thread; and on a FUSE disk, whose every file operation is a
// beat, file names without randomness, or --beats calls. A *campaign.TargetError gets it in
// place, so that the report of the refusal says it too.
func beatsAdvice(err error, targets []campaign.Target) error {
	if !errors.Is(err, sim.ErrNondeterministic) {
		return err
	}
	var te *campaign.TargetError
	named := errors.As(err, &te)
	for _, t := range targets {
		c := t.Command
		if c == nil || named && te.Target != t.Name || !named && !strings.HasPrefix(err.Error(), t.Name+":") {
			continue
		}
		why := "requests made at once are decided in the order of what they ask (PROTOCOL.md), so what differs is what the command asks: arguments, keys or file names taken from the clock of the machine, a random source of its own, the pid, or the order its threads happened to run in (a shared counter)"
		if c.Disk == string(process.FUSE) && c.Beats != string(process.CallBeats) {
			why = "if " + t.Name + "'s file operations are what differs from run to run: name temporary files without randomness or the pid, as NAME.tmp, and keep logs out of the state directory; else --beats calls makes only its requests beats, and leaves out the faults that need file operations as beats; and " + why
		}
		advise := func(err error) error { return fmt.Errorf("%w (%s)", err, why) }
		if named {
			te.Err = advise(te.Err)
			return err
		}
		return advise(err)
	}
	return err
}

// commandDigest returns the digest of cmd's files: those its command lines name, its next
// version's too, and its cassette.
func commandDigest(cmd reports.Command) string {
	return digest(append(slices.Clone(cmd.Argv), cmd.Upgrade...), cmd.Dir, cmd.Cassette)
}

// digest returns the SHA-256, in hex, of the files a command line names (its first word when it
// is a path, and any later word naming a regular file, relative to dir) and of its cassette:
// the target's script or binary and its model's answers, whose change a report's provenance
// shows. It returns "" if it names none.
func digest(argv []string, dir, cassette string) string {
	h := sha256.New()
	named := false
	if cassette != "" {
		argv = append(slices.Clone(argv), cassette) // the model's answers are the target's too
	}
	for i, w := range argv {
		if i == 0 && !strings.Contains(w, "/") {
			continue // an interpreter or a program found in PATH: not the target
		}
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00", w)
		io.Copy(h, f)
		f.Close()
		named = true
	}
	if !named {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// replayExec returns the chaoskit replay command that reruns a case of the command cmd.
func replayExec(cmd reports.Command, seed uint64, s faults.Schedule) string {
	q := campaign.ShellQuote
	words := []string{"chaoskit replay --exec", q(joinCommand(cmd.Argv))}
	if cmd.Name != (process.Target{Argv: cmd.Argv}).Name() {
		words = append(words, "--name", q(cmd.Name))
	}
	for _, t := range cmd.Tools {
		words = append(words, "--tool", q(t))
	}
	if len(cmd.State) > 0 {
		words = append(words, "--state", q(joinCommand(cmd.State)))
	}
	if len(cmd.Upgrade) > 0 {
		words = append(words, "--upgrade-exec", q(joinCommand(cmd.Upgrade)))
	}
	if len(cmd.UpgradeState) > 0 {
		words = append(words, "--upgrade-state", q(joinCommand(cmd.UpgradeState)))
	}
	for _, p := range cmd.Ignore {
		words = append(words, "--ignore", q(p))
	}
	if cmd.Disk != "" && cmd.Disk != string(process.Plain) {
		words = append(words, "--disk", q(cmd.Disk))
	}
	if cmd.Beats != "" {
		words = append(words, "--beats", q(cmd.Beats))
	}
	if cmd.Clock != "" {
		words = append(words, "--clock", q(cmd.Clock))
	}
	if cmd.Cassette != "" {
		words = append(words, "--cassette", q(cmd.Cassette))
	}
	for _, h := range cmd.HTTP {
		words = append(words, "--http", q(h))
	}
	if cmd.Dir != "" {
		words = append(words, "--dir", q(cmd.Dir))
	}
	for _, e := range cmd.Env {
		words = append(words, "--env", q(e))
	}
	words = append(words, "--seed", fmt.Sprint(seed), "--schedule", q(s.String()))
	return strings.Join(words, " ")
}

// joinCommand writes argv as one command line that splitCommand reads back.
func joinCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = campaign.ShellQuote(w)
	}
	return strings.Join(words, " ")
}

// splitCommand splits a command line into words as a POSIX shell would, with single quotes,
// double quotes and backslashes, but no expansion of any kind. No shell runs the command, so an
// unquoted shell operator (a pipe, a redirection, a list) is refused, suggesting sh -c.
func splitCommand(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	end := func() error {
		if !quoted && shellOperator.MatchString(w.String()) {
			return fmt.Errorf("%q is a shell operator, and the command runs without a shell; for one, give sh -c %s", w.String(), campaign.ShellQuote(s))
		}
		words, inWord, quoted = append(words, w.String()), false, false
		w.Reset()
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\'' || c == '"' || c == '\\' {
			quoted = true
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				if err := end(); err != nil {
					return nil, err
				}
			}
			continue
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed single quote at column %d", i+1)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte(`"\$`+"`", s[j+1]) >= 0 {
					j++
				}
				w.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("unclosed double quote at column %d", i+1)
			}
			i = j
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		if err := end(); err != nil {
			return nil, err
		}
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("no command")
	}
	return words, nil
}

// shellOperator matches a word that a shell would read as an operator: |, ||, &&, &, ;, and
// redirections (>, >>, <, 2>, 2>&1, &>, >file ...).
var shellOperator = regexp.MustCompile(`^(\|\|?|&&?|;;?|\|&|[0-9]*[<>].*|&>.*)$`)
