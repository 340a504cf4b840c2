package main

import (
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// The backlog mode's watching goroutine, and what both modes share.

// watcher starts a goroutine that watches a run of the pipeline and calls
// done once it is complete; the returned function stops it and waits for
// it. watchKafka is the backlog mode's, (*sustainedRun).watch the
// sustained mode's.
type watcher func(k *onkafka.Kafka, tally *ktally, start time.Time, done func(time.Time)) (stop func())

// watchKafka starts a goroutine that prints progress every second and
// calls done once every generated event (target) is settled and the
// source has received received records (the bars' flush too); the
// returned function stops it and waits for it.
func watchKafka(k *onkafka.Kafka, tally *ktally, f kafkaFlags, stdout io.Writer, target, received int64, start time.Time, done func(time.Time)) (stop func()) {
	w := &backlogWatch{k: k, tally: tally, quiet: f.quiet, stdout: stdout, target: target, received: received, done: done,
		start: start, lastAt: start, nextLine: start.Add(time.Second)}
	return goWatch(func(stopped <-chan struct{}) {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopped:
				return
			case now := <-tick.C:
				w.tick(now)
			}
		}
	})
}

// goWatch runs watch on a goroutine of its own until the returned
// function closes its channel; that function waits for it to return.
func goWatch(watch func(stopped <-chan struct{})) (stop func()) {
	stopped, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		watch(stopped)
	}()
	return func() {
		close(stopped)
		<-exited
	}
}

// backlogWatch is the state of the backlog mode's watching goroutine.
type backlogWatch struct {
	k        *onkafka.Kafka
	tally    *ktally
	quiet    bool
	stdout   io.Writer
	target   int64 // events to settle
	received int64 // records to receive: the events and the bars' flush
	done     func(time.Time)
	ended    bool // done was called

	start, lastAt, nextLine time.Time
	last                    int64 // settled at the last line
}

// tick calls done once the target is settled, and prints a line when one
// is due.
func (w *backlogWatch) tick(now time.Time) {
	st := w.k.Source.Stats()
	settled := st.Acked
	if !w.ended && settled >= w.target && st.Received >= w.received {
		w.ended = true
		w.done(now)
	}
	if w.quiet || !now.After(w.nextLine) {
		return
	}
	w.tally.mu.Lock()
	win := w.tally.window
	w.tally.window = market.Latencies{}
	w.tally.mu.Unlock()
	fmt.Fprintf(w.stdout, "%6.1fs  events/s %7s  latency p50 %-7s p99 %-7s  in-flight %6d  dead-lettered %6d  stored %d\n",
		now.Sub(w.start).Seconds(), si(float64(settled-w.last)/now.Sub(w.lastAt).Seconds()),
		ms(win.Q(0.5)), ms(win.Q(0.99)), w.k.Source.Stats().InFlight, w.k.Dead(), w.k.Stored())
	w.last, w.lastAt, w.nextLine = settled, now, w.nextLine.Add(time.Second)
}
