package faults

import (
	"errors"
	"syscall"
)

// ErrInjected is wrapped by every error the fault layer injects, so a test can tell an injected
// fault from a real one with errors.Is(err, faults.ErrInjected). Injected errors also match the
// errno they imitate: errors.Is(err, syscall.ENOSPC) holds for an injected full disk.
var ErrInjected = errors.New("chaoskit: injected fault")

// injected is an errno that the fault layer raised on purpose. It prints exactly like the errno
// (so a harness's log reads as it would in production) and matches both the errno and ErrInjected.
type injected struct{ errno syscall.Errno }

func (e injected) Error() string { return e.errno.Error() }

// Unwrap returns the imitated errno.
func (e injected) Unwrap() error { return e.errno }

// Is reports whether target is ErrInjected; the errno itself is matched through Unwrap.
func (e injected) Is(target error) bool { return target == ErrInjected }

// Injected returns an error that reads and matches like errno and also wraps ErrInjected.
func Injected(errno syscall.Errno) error { return injected{errno} }
