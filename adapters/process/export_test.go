package process

// TrackByMarker makes chaoskit track commands by the marker in their environment alone, as on a
// machine without cgroups, and returns what undoes it. A test that calls it must not run in
// parallel with others.
func TrackByMarker() (undo func()) {
	noCgroups.Store(true)
	return func() { noCgroups.Store(false) }
}
