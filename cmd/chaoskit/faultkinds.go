package main

import (
	"fmt"

	"github.com/chaoskit/chaoskit/faults"
)

func runFaults(c *cli, args []string) error {
	if err := c.noArguments("faults", args); err != nil {
		return err
	}
	for _, k := range faults.Kinds() {
		fmt.Fprintf(c.stdout, "%-16s %-8s %-24s %s\n", k.Kind, k.Family, faultForm(k), k.Summary)
	}
	return nil
}

// faultForm shows how a fault of kind k is written in a schedule, e.g. "diskfull@N:BYTES".
func faultForm(k faults.KindInfo) string {
	form := string(k.Kind) + "@N"
	switch k.Arg {
	case faults.BytesArg:
		form += ":BYTES"
	case faults.DurationArg:
		form += "+DURATION"
	case faults.WorkerArg:
		form += "[:WORKER]"
	case faults.ModeArg:
		for _, m := range k.Modes[1:] {
			form += "[:" + m + "]"
		}
	}
	return form
}
