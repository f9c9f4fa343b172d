//go:build !linux

package lab

import "syscall"

// childSysProcAttr: own process group. Outside Linux there is no Pdeathsig: a Go process killed
// with SIGKILL can leave its children running; Close and Ctrl-C still clean up.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
