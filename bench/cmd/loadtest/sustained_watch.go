package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// The sustained mode's watching goroutine: the generator, a line a
// second, the window's opening and closing, the drain.

// watch is runKafkaMarket's watcher for sustained mode: it starts the
// generator, prints a line a second, judges the window when the generator
// exits, and calls done once every event in the topic is settled.
func (s *sustainedRun) watch(k *onkafka.Kafka, tally *ktally, _ time.Time, done func(time.Time)) (stop func()) {
	w := &windowWatch{s: s, k: k, tally: tally, done: done}
	return goWatch(w.run)
}

// windowWatch is the state of the sustained mode's watching goroutine.
type windowWatch struct {
	s     *sustainedRun
	k     *onkafka.Kafka
	tally *ktally
	done  func(time.Time)
	once  sync.Once

	gstart             time.Time // when the generator started
	lastIn, lastStored int64     // at the last line
	lastAt, nextLine   time.Time
	target             int64 // events to settle once the window is over; -1 before, -2 once done
	received           int64 // and records to receive: those and the bars' flush
	drainStart         time.Time
	drainSettled0      int64
}

func (w *windowWatch) fail(err error) {
	w.s.err = err
	w.once.Do(func() { w.done(time.Now()) })
}

func (w *windowWatch) run(stopped <-chan struct{}) {
	s := w.s
	if err := s.awaitAssigned(stopped); err != nil {
		if !errors.Is(err, errStopped) {
			w.fail(err)
		}
		return
	}
	c, err := s.startGen()
	if err != nil {
		w.fail(err)
		return
	}
	defer c.end()
	s.in.OnExit(func() { c.cmd.Process.Kill() })
	w.gstart = time.Now()
	w.lastAt, w.nextLine, w.target = w.gstart, w.gstart.Add(time.Second), -1
	warm := time.After(s.f.warmup)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	genDone := c.exited
	for {
		select {
		case <-stopped:
			return
		case now := <-warm:
			warm = nil
			err = w.open(now)
		case <-genDone:
			genDone, warm = nil, nil
			err = w.close(c)
		case now := <-tick.C:
			err = w.tick(now, genDone == nil)
		}
		if err != nil {
			w.fail(err)
			return
		}
	}
}

// open ends the warm-up and opens the window.
func (w *windowWatch) open(now time.Time) error {
	s := w.s
	if err := s.openWindow(now, w.k.Stored()); err != nil {
		return err
	}
	w.tally.setSteady(true)
	if err := s.bars.open(now, s.f.kafka); err != nil {
		return err
	}
	if s.f.warmup > 0 && !s.f.quiet {
		fmt.Fprintf(s.stdout, "%6.1fs warm-up over (%s at the rate, counted in no figure): the %s window starts\n",
			now.Sub(w.gstart).Seconds(), s.f.warmup, s.f.duration)
	}
	return nil
}

// close ends the window once the generator has exited, and starts the
// drain.
func (w *windowWatch) close(c *child) error {
	s := w.s
	now := time.Now()
	in, err := s.endOffsets()
	if err != nil {
		return err
	}
	settled := w.k.Source.Stats().Acked
	s.closeWindow(now, in, w.k.Stored(), w.through())
	w.tally.setSteady(false)
	s.cons, s.prod = w.tally.steadyFigures()
	if now.Sub(w.lastAt) >= 500*time.Millisecond { // else the next line covers it
		w.line(now, in, "window")
	}
	s.genLine = c.last
	if c.err != nil {
		s.err = fmt.Errorf("generator: %w", c.err)
	}
	flushed, err := s.bars.flush(context.Background(), s.f.kafka)
	if err != nil {
		return err
	}
	w.target, w.received, w.drainStart, w.drainSettled0 = in, in+flushed, now, settled
	w.nextLine = now.Add(time.Second)
	return nil
}

// tick ends the run once the drain has settled every event, and prints
// a line a second.
func (w *windowWatch) tick(now time.Time, genOver bool) error {
	s := w.s
	if w.target >= 0 {
		if st := w.k.Source.Stats(); st.Acked >= w.target && st.Received >= w.received {
			s.drainWall, s.drainEvts = now.Sub(w.drainStart), st.Acked-w.drainSettled0
			w.once.Do(func() { w.done(now) })
			w.target = -2
		}
	}
	if now.Before(w.nextLine) {
		return nil
	}
	w.nextLine = w.nextLine.Add(time.Second)
	in, err := s.endOffsets()
	if err != nil {
		return err
	}
	phase := ""
	switch {
	case genOver:
		phase = "drain"
	case s.wstart.IsZero():
		phase = "warmup"
	default:
		s.sample(now, in-w.through())
	}
	w.line(now, in, phase)
	return nil
}

// through returns the events the lag counts as done: those settled; with
// the bars, those the main branch stored in ClickHouse or dead-lettered.
// The bars' windows hold every event unsettled until the watermark
// passes its window's end — up to a window (market.BarWidth) and the
// out-of-orderness after it arrived, which a settled count would show as
// a lag of up to 1.1 s of events, rising and falling each second — by
// design, not from falling behind; and a slow bars branch holds the main
// branch back through the fan-out, so the main branch's count still
// shows it.
func (w *windowWatch) through() int64 {
	if w.s.bars == nil {
		return w.k.Source.Stats().Acked
	}
	return w.k.Stored() + w.k.Dead()
}

// line prints the figures since the last line.
func (w *windowWatch) line(now time.Time, in int64, phase string) {
	settled := w.through()
	st := w.k.Stored()
	cons, prod := w.tally.takeWindow()
	dt := now.Sub(w.lastAt).Seconds()
	if !w.s.f.quiet {
		fmt.Fprintf(w.s.stdout, "%6.1fs %-6s in %7s/s  stored %7s/s  lag %7d  consume→CH p50 %-6s p90 %-6s p99 %-6s max %-6s  produced→CH p50 %-6s p90 %-6s p99 %-6s max %-6s  dead %d\n",
			now.Sub(w.gstart).Seconds(), phase, si(float64(in-w.lastIn)/dt), si(float64(st-w.lastStored)/dt), in-settled,
			ms(cons.Q(0.5)), ms(cons.Q(0.9)), ms(cons.Q(0.99)), ms(cons.Max()),
			ms(prod.Q(0.5)), ms(prod.Q(0.9)), ms(prod.Q(0.99)), ms(prod.Max()), w.k.Dead())
	}
	w.lastIn, w.lastStored, w.lastAt = in, st, now
}
