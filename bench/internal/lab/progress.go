package lab

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress shows, on one rewritten line of a terminal, which case runs and
// about how long is left. It writes nothing when its writer is not a
// terminal, so that logs and pipes stay clean.
type progress struct {
	mu          sync.Mutex
	w           io.Writer // nil: quiet
	start       time.Time
	total, done int
	shown       bool
}

// newProgress returns a progress display on w if w is a terminal, and a
// quiet one otherwise.
func newProgress(w io.Writer) *progress {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return &progress{w: w}
	}
	return &progress{}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

func (p *progress) begin(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.total, p.done = time.Now(), total, 0
}

func (p *progress) caseDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
}

// eta extrapolates the time per finished case to the cases left.
func (p *progress) eta() string {
	if p.done == 0 {
		return "ETA …"
	}
	per := time.Since(p.start) / time.Duration(p.done)
	left := per * time.Duration(p.total-p.done)
	return "ETA " + left.Round(time.Second).String()
}

func (p *progress) show(exp, group, variant string, run, runs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	stage := "warm-up"
	if run > 0 {
		stage = fmt.Sprintf("run %d/%d", run, runs)
	}
	line := fmt.Sprintf("[%d/%d] %s · %s · %s · %s · %s", p.done+1, p.total, exp, group, variant, stage, p.eta())
	if r := []rune(line); len(r) > 118 {
		line = string(r[:117]) + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.shown = true
}

func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
