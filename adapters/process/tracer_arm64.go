package process

import "syscall"

// stackPointer returns the stack pointer of the stopped task pid.
func stackPointer(pid int) (uint64, error) {
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		return 0, err
	}
	return regs.Sp, nil
}
