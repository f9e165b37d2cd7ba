// Command chaoskit runs chaos campaigns against agent harnesses and writes their reports.
//
// Usage:
//
//	chaoskit run --target NAME --faults LIST [--mode exhaustive|random] [--cases N] [--seed N]
//	             [--out DIR] [--format text,json,md,junit,html] [--gate EXPR] [--shard I/N]
//	             [--parallel N] [--resume DIR]
//	chaoskit replay --case ID DIR/report.json
//	chaoskit replay --target NAME --seed N --schedule SCHEDULE
//	chaoskit gate [--baseline OLD.json [--tolerance LIST]] [--gate EXPR] NEW.json
//	chaoskit merge --out DIR SHARD_DIR...
//	chaoskit targets | faults
//	chaoskit demo [--out DIR] [--seed N] [--faults LIST]
//
// Flags may come before or after the positional arguments. Exit codes: 0 everything held (or
// the gate did), 1 a property was violated (or the gate failed), 2 a usage or input error, 3 a
// case could not be decided and none failed, 130 and 143 stopped by SIGINT and SIGTERM (as
// shells report a command a signal killed). The README's "Command line" section has the rest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/sim"
	"github.com/spf13/afero"
)

// Exit codes. A command stopped by a signal exits 128 plus the signal's number, as a shell
// reports a command the signal killed: 130 for SIGINT, 143 for SIGTERM.
const (
	exitOK      = 0
	exitFail    = 1
	exitUsage   = 2
	exitUnknown = 3
	exitSignal  = 128
)

// signalled is the cause of a command's context when a signal stopped it.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return "stopped by " + s.name() }

// name returns the signal's name: SIGINT, SIGTERM.
func (s signalled) name() string {
	switch s.sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.sig.String()
}

// usageError is an error in how chaoskit was called: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code other than 0 out of a command.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// cli is what a command runs in: its output streams, whether stdout is a terminal, the
// filesystem its files go to, and the clock the progress bar reads.
type cli struct {
	ctx            context.Context // done on SIGINT or SIGTERM, with a signalled cause
	args           []string        // the command line, less the program's name
	stdout, stderr io.Writer
	terminal       bool
	fs             afero.Fs
	now            func() time.Time
	notes          []string  // what the text summary should say about how the command ran
	tally          sim.Tally // what the last campaign ran, for the text summary
}

type command struct {
	name, summary string
	run           func(c *cli, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"run", "run a campaign against targets and write its report directory", runRun},
		{"replay", "run one case again and show its beats, violations and diff", runReplay},
		{"gate", "compare a report with a baseline, or check it against a gate expression", runGate},
		{"merge", "merge the report directories of a campaign's shards into one", runMerge},
		{"targets", "list the targets", runTargets},
		{"faults", "list the fault kinds", runFaults},
		{"demo", "run the reference agent and its variants under every fault kind", runDemo},
		{"bench", "measure what a case costs against a bare run, how that grows, and throughput", runBench},
		{"record", "run an agent once against a real model provider and write its answers as a cassette", runRecord},
		{"mcp", "serve MCP on stdin and stdout, relayed to the campaign: the command an agent launches as its MCP server", runMCP},
		{"version", "print chaoskit's version", runVersion},
	}
}

func main() {
	process.Init() // chaoskit's helpers are copies of it: the reaper, the FUSE disks' server
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit code. The progress bar goes to stderr,
// and only when stderr is a terminal. SIGINT or SIGTERM stops a command at once, a golden run or
// a case in the middle: their processes are killed and their disks unmounted, a campaign's
// journal is kept, and the exit code is 130 or 143; a second signal stops chaoskit without
// waiting for that (its reaper still kills the processes and unmounts the disks).
func run(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return exitUsage
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1:
		usage(stdout)
		return exitOK
	case args[0] == "help":
		return run([]string{args[1], "--help"}, stdout, stderr)
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	for _, c := range commands {
		if c.name == args[0] {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			signals := make(chan os.Signal, 1)
			signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
			defer func() {
				signal.Stop(signals)
				close(signals)
			}()
			go func() {
				if sig, ok := <-signals; ok {
					cancel(signalled{sig.(syscall.Signal)})
					signal.Stop(signals) // a second signal stops chaoskit at once
				}
			}()
			env := &cli{ctx: ctx, args: args, stdout: stdout, stderr: stderr, terminal: isTerminal(stderr), fs: afero.NewOsFs(), now: time.Now}
			return exitCode(c.run(env, args[1:]), stderr)
		}
	}
	fmt.Fprintf(stderr, "chaoskit: unknown command %q (run chaoskit help)\n", args[0])
	return exitUsage
}

func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var ee exitError
	var sig signalled
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case (errors.Is(err, campaign.ErrInterrupted) || errors.Is(err, sim.ErrInterrupted)) && errors.As(err, &sig):
		fmt.Fprintf(stderr, "chaoskit: %s\n", oneLine(err.Error()))
		return exitSignal + int(sig.sig)
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "chaoskit: %s\n", oneLine(err.Error())) // with what wraps it
		return exitUsage
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "chaoskit: %s\n", oneLine(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "chaoskit: %s\n", oneLine(err.Error()))
	return exitUsage
}

// oneLine puts an error message on one line, so that every error is one line of stderr: but for
// what it quotes of a program's output (a traceback), in lines indented by four spaces, which
// stay lines, so that they read as the program printed them.
func oneLine(msg string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(msg), "\n") {
		switch {
		case i == 0:
		case strings.HasPrefix(line, "    "):
			b.WriteString("\n")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// isTerminal reports whether w is a terminal: a character device other than /dev/null.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "chaoskit: deterministic chaos testing for agent harnesses")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nchaoskit COMMAND --help lists a command's flags.")
	fmt.Fprintln(w, "exit codes: 0 every case passed (or the gate held), 1 a property was violated (or the gate failed),")
	fmt.Fprintln(w, "2 a usage or input error, 3 a case could not be decided and none failed,")
	fmt.Fprintln(w, "130 stopped by SIGINT (Ctrl-C), 143 stopped by SIGTERM; a stopped run continues with run --resume DIR")
}

// parse parses flags that may come before, between or after positional arguments, and returns
// the positional ones. A flag it does not know is a usage error naming it; -h or --help prints
// the command's flags and returns flag.ErrHelp.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(c.stdout, "usage of chaoskit %s (flags may come before or after arguments):\n", fs.Name())
				fs.SetOutput(c.stdout)
				fs.PrintDefaults()
				return nil, err
			}
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
				return nil, usagef("%s: unknown flag %s (chaoskit %s --help lists them)", fs.Name(), name, fs.Name())
			}
			return nil, usagef("%s: %s", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// noArguments parses the arguments of a command that takes neither flags nor positional
// arguments.
func (c *cli) noArguments(cmd string, args []string) error {
	pos, err := c.parse(flag.NewFlagSet(cmd, flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	return noPositional(cmd, pos)
}

// noPositional refuses positional arguments for a command that takes none.
func noPositional(cmd string, pos []string) error {
	if len(pos) > 0 {
		return usagef("%s takes no arguments, got %q", cmd, pos[0])
	}
	return nil
}

// setFlags returns the names of the flags the command line set.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

func runVersion(c *cli, args []string) error {
	if err := c.noArguments("version", args); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "chaoskit", version())
	return nil
}

// renamed takes the value of a flag given by its old name, oldName, as that of its new one,
// newName, saying once on stderr that the old name is deprecated; set, the flags given, then
// counts the new one as given. Both given is a usage error.
func (c *cli) renamed(set map[string]bool, oldName string, old *int, newName string, value *int) error {
	if !set[oldName] {
		return nil
	}
	if set[newName] {
		return usagef("--%s is the old name of --%s: give one of them", oldName, newName)
	}
	fmt.Fprintf(c.stderr, "chaoskit: --%s is deprecated: it is --%s now (cases run at once; a worker is a copy of the target)\n", oldName, newName)
	*value, set[newName] = *old, true
	return nil
}
