// Package leftover checks that a test left nothing behind: no process it started (directly, or
// through chaoskit and a target, however far down), no mount and no temporary directory of
// chaoskit's.
//
// A Scope marks what one test starts with an environment variable of its own, which every
// process inherits from its parent, so that the check sees the test's processes and never those
// of another test, another chaoskit or a user running the same example in the same directory.
package leftover
