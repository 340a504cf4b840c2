package services

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Process is a program running as a child of this one, its stdout and
// stderr read together, line by line, into a log that Await searches.
type Process struct {
	Cmd *exec.Cmd

	mu    sync.Mutex
	grew  *sync.Cond // signalled on each line and at the end of the output
	lines []string
	ended bool          // the output reached EOF: the process has exited
	read  chan struct{} // closed once the output is read to its end
	next  int           // Await's position in lines
}

// Start starts bin with args, env added to this process's environment.
// The caller ends it: Wait, or Kill.
func Start(bin string, env []string, args ...string) (*Process, error) {
	p := &Process{Cmd: exec.Command(bin, args...), read: make(chan struct{})}
	p.grew = sync.NewCond(&p.mu)
	p.Cmd.Env = append(os.Environ(), env...)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.Cmd.Stdout, p.Cmd.Stderr = w, w
	err = p.Cmd.Start()
	w.Close() // the child holds its own copy
	if err != nil {
		r.Close()
		return nil, err
	}
	go p.collect(r)
	return p, nil
}

// collect reads the output to its end: once every copy of the pipe's
// writing end is closed, when the process and any child that kept its
// output have exited.
func (p *Process) collect(r *os.File) {
	defer close(p.read)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		p.grew.Broadcast()
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.ended = true
	p.grew.Broadcast()
	p.mu.Unlock()
}

// Await returns the submatches of the first line not yet searched that
// matches re; it fails when the output ends first or after within.
func (p *Process) Await(re *regexp.Regexp, within time.Duration) ([]string, error) {
	timedOut := false // under p.mu
	timer := time.AfterFunc(within, func() {
		p.mu.Lock()
		timedOut = true
		p.grew.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for ; p.next < len(p.lines); p.next++ {
			if m := re.FindStringSubmatch(p.lines[p.next]); m != nil {
				p.next++
				return m, nil
			}
		}
		switch {
		case p.ended:
			return nil, fmt.Errorf("the output ended with no line matching %v", re)
		case timedOut:
			return nil, fmt.Errorf("no line matching %v within %v", re, within)
		}
		p.grew.Wait()
	}
}

// Output returns every line read so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n") + "\n"
}

// Wait waits for the process to exit and its output to end, and returns
// its exit code; after within, it kills the process and fails.
func (p *Process) Wait(within time.Duration) (int, error) {
	exited := make(chan error, 1)
	go func() { exited <- p.Cmd.Wait() }()
	select {
	case err := <-exited:
		<-p.read
		if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
			return -1, err
		}
		return p.Cmd.ProcessState.ExitCode(), nil
	case <-time.After(within):
		p.Cmd.Process.Kill()
		<-exited
		<-p.read
		return -1, fmt.Errorf("the process did not exit within %v", within)
	}
}

// Kill kills the process unless it has been waited for, and waits for it
// and its output. It is meant for a test's cleanup.
func (p *Process) Kill() {
	if p.Cmd.ProcessState != nil {
		return
	}
	p.Cmd.Process.Kill()
	p.Cmd.Wait()
	<-p.read
}
