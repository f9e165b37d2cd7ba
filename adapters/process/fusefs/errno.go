package fusefs

import (
	"errors"
	"io/fs"
	"syscall"
)

// Errno returns the errno a program sees for err, an error from an afero.Fs: the syscall.Errno
// that err wraps (through *fs.PathError, *os.LinkError, *os.SyscallError, or the fault layer's
// injected errors), else the errno of a standard error value (fs.ErrNotExist is ENOENT, ...),
// else EIO. A nil err is 0.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == 0 {
			return syscall.EIO // a wrapped success is still a failure
		}
		return errno
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	}
	return syscall.EIO
}
