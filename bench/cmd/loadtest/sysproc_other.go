//go:build !linux

package main

import "syscall"

// childAttr: outside Linux a child ends by its stdin's EOF when this
// process dies (`loadtest gen --exit-on-stdin-eof`).
func childAttr() *syscall.SysProcAttr { return nil }
