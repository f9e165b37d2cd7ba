package process

// TrackByMarker makes chaoskit track commands by the marker in their environment alone, as on a
// machine without cgroups, and returns what undoes it. A test that calls it must not run in
// parallel with others.
func TrackByMarker() (undo func()) {
	noCgroups.Store(true)
	return func() { noCgroups.Store(false) }
}

// FatalSyncs makes a command's sync(2) and syncfs(2) calls kill it, as on a machine without
// seccomp user notifications, and returns what undoes it. A test that calls it must not run in
// parallel with others.
func FatalSyncs() (undo func()) {
	noSyncTrap.Store(true)
	return func() { noSyncTrap.Store(false) }
}

// UntrappedClocks makes every command run on the wall clock, as on a machine that cannot trap
// its clock, and returns what undoes it. A test that calls it must not run in parallel with
// others.
func UntrappedClocks() (undo func()) {
	was := noVirtual.Swap(true)
	return func() { noVirtual.Store(was) }
}
