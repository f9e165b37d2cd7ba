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
		fmt.Fprintf(c.stdout, "%-16s %-8s %-28s %s\n", k.Kind, k.Family, k.Form(), k.Summary)
	}
	return nil
}
