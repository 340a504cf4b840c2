package market

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupts turns SIGINT and SIGTERM into a drain, for the programs that
// run the pipeline (sluice demo and serve, the lab's load tools). The
// first signal cancels the context that Draining returns: the program
// stops taking input, finishes and acknowledges what is inside, prints its
// summary and exits 0. A second signal runs the cleanups registered with
// OnExit and exits at once with status 128 + the signal's number, as a
// shell reports a process killed by it.
//
// A nil *Interrupts is valid: it never drains, and OnExit does nothing
// (tests run the programs in-process).
type Interrupts struct {
	prog     string // names the program in what it prints
	draining context.Context
	drain    context.CancelCauseFunc
	stderr   io.Writer
	exit     func(code int)
	quit     chan struct{} // closed by stop
	exited   chan struct{} // closed when the watching goroutine has returned
	unnotify func()

	mu       sync.Mutex // guards cleanups
	cleanups []func()
}

// CatchSignals starts catching SIGINT and SIGTERM for this process until
// Stop is called; prog names the program in the lines it prints to stderr.
func CatchSignals(prog string, stderr io.Writer) *Interrupts {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	in := WatchSignals(prog, ch, stderr, os.Exit)
	in.unnotify = func() { signal.Stop(ch) }
	return in
}

// WatchSignals starts the goroutine that acts on the signals received from
// ch; Stop ends it. exit is os.Exit but in tests.
func WatchSignals(prog string, ch <-chan os.Signal, stderr io.Writer, exit func(int)) *Interrupts {
	ctx, cancel := context.WithCancelCause(context.Background())
	in := &Interrupts{prog: prog, draining: ctx, drain: cancel, stderr: stderr, exit: exit,
		quit: make(chan struct{}), exited: make(chan struct{}), unnotify: func() {}}
	go in.watch(ch)
	return in
}

func (in *Interrupts) watch(ch <-chan os.Signal) {
	defer close(in.exited)
	for n := 0; ; n++ {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-in.quit:
			return
		}
		if n == 0 {
			fmt.Fprintf(in.stderr, "%s: %v: draining (taking no new events, finishing what is inside); signal again to exit at once\n", in.prog, sig)
			in.drain(fmt.Errorf("%v", sig))
			continue
		}
		in.mu.Lock()
		for _, f := range in.cleanups {
			f()
		}
		in.mu.Unlock()
		fmt.Fprintf(in.stderr, "%s: %v again: exiting at once\n", in.prog, sig)
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		in.exit(code)
		return // exit returns only in tests
	}
}

// Draining returns a context that is cancelled, with the signal as its
// cause, at the first signal.
func (in *Interrupts) Draining() context.Context {
	if in == nil {
		return context.Background()
	}
	return in.draining
}

// OnExit registers f to run, on the watching goroutine, before an exit at
// a second signal. f must be safe to run concurrently with the program.
func (in *Interrupts) OnExit(f func()) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.cleanups = append(in.cleanups, f)
}

// Stop stops catching signals and waits for the watching goroutine to
// return.
func (in *Interrupts) Stop() {
	in.unnotify()
	close(in.quit)
	<-in.exited
	in.drain(nil)
}
