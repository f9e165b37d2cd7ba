// Command chaoskit runs chaos campaigns against agent harnesses and writes their reports.
//
// Usage:
//
//	chaoskit demo [--out DIR] [--seed N]
//
// Exit codes: 0 everything held, 1 a property was violated, 2 a usage or input error, 3 a case
// could not be decided.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes.
const (
	exitOK      = 0
	exitFail    = 1
	exitUsage   = 2
	exitUnknown = 3
)

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

type command struct {
	name, summary string
	run           func(args []string, stdout io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"demo", "run the reference agent and its variants under every storage fault", runDemo},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return exitCode(c.run(args[1:], stdout), stderr)
		}
	}
	fmt.Fprintf(stderr, "chaoskit: unknown command %q (run chaoskit help)\n", args[0])
	return exitUsage
}

func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "chaoskit: %s\n", ue.msg)
		return exitUsage
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "chaoskit: %s\n", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "chaoskit: %v\n", err)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "chaoskit: deterministic chaos testing for agent harnesses")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}

// parse parses flags that may come before, between or after positional arguments, and returns
// the positional ones. A flag it does not know is a usage error naming it.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %s", fs.Name(), strings.TrimPrefix(err.Error(), "flag provided but not defined: "))
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
