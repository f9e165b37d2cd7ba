// Package testbin builds the module's commands once for every test binary that needs them.
//
// `go test ./...` runs each package's tests in a process of its own, so a sync.Once per
// package builds chaoskit once per package. Build keys a binary by a digest of the module's
// sources (every .go file, go.mod and go.sum) and keeps it in a directory of the user's cache
// shared by all test processes, built under a file lock: the first package that needs it builds
// it, every other one, at the same time or later, takes the same file. A change to any source
// gives a new digest, so a binary is never stale.
package testbin
