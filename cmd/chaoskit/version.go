package main

import (
	"runtime/debug"

	"github.com/chaoskit/chaoskit/reports"
)

// modulePath is chaoskit's module.
const modulePath = "github.com/chaoskit/chaoskit"

// version returns chaoskit's version as the running program was built with it: the module's
// version (a tag, or "(devel)" for a build from a checkout), and the revision and state of the
// checkout when the build recorded them.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if info.Main.Path != modulePath {
		for _, d := range info.Deps {
			if d.Path == modulePath {
				return d.Version
			}
		}
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += "+dirty"
		}
	}
	return v
}

// provenance returns the provenance of a report made by the command line args (less the
// program's name).
func provenance(args []string) *reports.Provenance {
	return &reports.Provenance{Chaoskit: version(), Args: args}
}
