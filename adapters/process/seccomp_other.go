//go:build !amd64

package process

// archOnlyNr are the system calls of interest that only some architectures have: none here.
var archOnlyNr = map[string]int{}
