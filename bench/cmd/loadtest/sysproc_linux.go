package main

import "syscall"

// childAttr makes the kernel kill a child process if this one dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
