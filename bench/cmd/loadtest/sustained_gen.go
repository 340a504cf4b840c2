package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// The sustained mode's generator: `loadtest gen`, a child process.

var errStopped = errors.New("stopped")

// child is the running generator.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{} // closed once Wait returned and its output is read
	err    error         // Wait's, set before exited closes
	last   string        // its last line of stdout
}

func (s *sustainedRun) startGen() (*child, error) {
	exe := s.f.genExe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding this program to start the generator: %w", err)
		}
	}
	c := &child{cmd: exec.Command(exe, s.genArgs()...), exited: make(chan struct{})}
	c.cmd.SysProcAttr = childAttr()
	c.cmd.Stderr = s.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the generator: %w", err)
	}
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.last = sc.Text()
		}
		c.err = c.cmd.Wait()
	}()
	return c, nil
}

// end stops the generator if it still runs — EOF on its stdin, SIGTERM,
// then SIGKILL — and waits for it.
func (c *child) end() {
	c.stdin.Close()
	select {
	case <-c.exited:
		return
	case <-time.After(2 * time.Second):
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return
	case <-time.After(3 * time.Second):
	}
	c.cmd.Process.Kill()
	<-c.exited
}
