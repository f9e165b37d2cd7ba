package process

import "golang.org/x/sys/unix"

// archOnlyNr are the system calls of interest that this architecture has and arm64 does not.
var archOnlyNr = map[string]int{"time": unix.SYS_TIME, "poll": unix.SYS_POLL, "select": unix.SYS_SELECT, "epoll_wait": unix.SYS_EPOLL_WAIT}
