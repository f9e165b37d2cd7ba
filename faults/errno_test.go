package faults_test

import "syscall"

const (
	syscall_ENOSPC = syscall.ENOSPC
	syscall_EIO    = syscall.EIO
)
