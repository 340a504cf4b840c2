package auto

import (
	"slices"
	"testing"
	"time"
)

// A knee between two doublings: the doubling past it gained part of what
// it could, and the check after slow start finds the count its throughput
// needed.
func TestControllerChecksADoublingThatGainedPartOnly(t *testing.T) {
	c := New(1, 256, 1, std)
	counts, reasons := reasonsOf(c, queueing(2*time.Millisecond, 24), 0, 100)
	if tail := counts[20:]; !within(tail, 24, 32) || above(tail, 27) > len(tail)/5 {
		t.Fatalf("counts after 2 s range over %d–%d, want 24–32, at most 1 in 5 above 27 (the dependency serves 24): %v", slices.Min(tail), slices.Max(tail), counts)
	}
	if !slices.Contains(reasons, Probe) {
		t.Fatalf("reasons %v: want a check probe", reasons)
	}
}

func TestControllerFollowsADependencyThatServesFewer(t *testing.T) {
	c := New(1, 256, 1, std)
	counts, _ := reasonsOf(c, queueing(2*time.Millisecond, 32), 0, 50)
	if tail := counts[20:]; !within(tail, 32, 40) || above(tail, 32) > len(tail)/5 {
		t.Fatalf("counts before the drop range over %d–%d, want 32–40, at most 1 in 5 above 32: %v", slices.Min(tail), slices.Max(tail), tail)
	}
	// The time per item rises fourfold: three ticks tell, then the count
	// halves while halvings cost nothing.
	counts, reasons := reasonsOf(c, queueing(2*time.Millisecond, 8), 50, 100)
	if i := slices.IndexFunc(counts, func(n int) bool { return n <= 9 }); i < 0 || i > 10 {
		t.Fatalf("counts after the drop %v: want 9 or fewer within 10 ticks", counts[:20])
	}
	if tail := counts[20:]; !within(tail, 8, 11) || above(tail, 8) > len(tail)/10 {
		t.Fatalf("counts from 2 s after the drop range over %d–%d, want 8–11 (step probes), at most 1 in 10 above 8: %v", slices.Min(tail), slices.Max(tail), tail)
	}
	if reasons[0] != Latency {
		t.Fatalf("first reason after the drop %q, want %q", reasons[0], Latency)
	}
}

// A check that clearly cost throughput is taken back, and the next one
// checks halfway between the two counts: a bisection of the doubling that
// crossed the knee.
func TestControllerBisectsAfterACheckTakenBack(t *testing.T) {
	c := New(1, 256, 32, std)
	c.noise, c.varied = 0.01*0.01, 100
	checkFrom32(c, 16, 0.01)
	var reason Reason
	for i := 0; i < std.MaxJudge && c.n == 16; i++ {
		_, reason, _ = stepOf(c, busyTick(16, 0.005))
	}
	if c.n != 32 || reason != Grow {
		t.Fatalf("count %d (%q) after a check that halved throughput, want 32 back (%q)", c.n, reason, Grow)
	}
	for range 3 {
		if n, reason, _ := stepOf(c, busyTick(32, 0.01)); n != 32 {
			if n != 23 || reason != Probe {
				t.Fatalf("next check to %d (%q), want 23, halfway between 16 and 32 on a log scale (%q)", n, reason, Probe)
			}
			return
		}
	}
	t.Fatalf("no check after three steady ticks, count %d", c.n)
}

// After a latency rise the count halves while calls still wait, but not
// below what Little's law says the throughput needs at the least time per
// call seen: the halving that used to go one step below the capacity
// (8 → 4 for a dependency that serves 8) is not tried.
func TestControllerHalvesNoFurtherThanTheThroughputNeeds(t *testing.T) {
	f := dropping(queueing(2*time.Millisecond, 32), queueing(2*time.Millisecond, 8), 50)
	c := New(1, 256, 1, std)
	counts, _ := reasonsOf(c, f, 0, 150)
	if low := slices.Min(counts[50:]); low < 8 {
		t.Fatalf("counts after the drop went down to %d, want 8 at least (the dependency serves 8): %v", low, counts[50:80])
	}
	if i := slices.Index(counts[50:], 8); i < 0 || i > 6 {
		t.Fatalf("counts after the drop %v: want 8 within 6 ticks", counts[50:70])
	}
}

// The bisection goes on while a count lies between the two: a check
// from 17 to 15 taken back is followed by one to 16.
func TestControllerBisectsToAdjacentCounts(t *testing.T) {
	c := New(1, 256, 17, std)
	c.slow, c.noise, c.varied = false, 0.01*0.01, 100
	c.n = 15
	x := 16 / 0.002e9 // the dependency serves 16
	before := make([]tick, 5)
	for i := range before {
		before[i] = tick{x: x, t: 17 / x}
	}
	c.pr = probe{from: 17, kind: check, before: before}
	stepUntilJudged(t, c, 15, 15/0.002e9)
	if c.n != 17 {
		t.Fatalf("count %d after a check that cost a sixteenth of the throughput, want 17 back", c.n)
	}
	for range 3 {
		if n, _, _ := stepOf(c, busyTick(17, x)); n != 17 {
			if n != 16 {
				t.Fatalf("next check to %d, want 16", n)
			}
			return
		}
	}
	t.Fatalf("no check after three steady ticks, count %d", c.n)
}

// A halving that clearly loses more than a little throughput goes back
// after two ticks, though its elasticity over the wide step is low (the
// least time per call seen, at one worker, put the count that the
// throughput needs one below what the dependency serves).
func TestControllerTakesBackAHalvingThatLostALittle(t *testing.T) {
	c := New(1, 256, 15, std)
	c.slow, c.noise, c.varied = false, 0.03*0.03, 100
	x := 8 / 0.0025e9 // the dependency serves 8, a call takes 2.5 ms
	before := make([]tick, 5)
	for i := range before {
		before[i] = tick{x: x, t: 15 / x}
	}
	c.n = 7
	c.pr = probe{from: 15, kind: halve, before: before}
	// 9 % less: an elasticity of 0.12 over 15 → 7, unclear in this noise.
	stepOf(c, busyTick(7, 0.91*x))
	if stepOf(c, busyTick(7, 0.91*x)); c.n != 8 {
		t.Fatalf("count %d two ticks after a halving that lost 9 %% of the throughput, want 8", c.n)
	}
}

// After a check taken back, the next check of the bisection is judged
// against ticks taken since, not against the first check's: ticks that
// the noise lifted made every later check look like a loss (in the lab, a
// dependency of 16 kept 17 workers after checks of 14, 15 and 16 all
// compared with the same five lucky ticks at 17).
func TestControllerJudgesTheNextCheckAgainstFreshTicks(t *testing.T) {
	c := New(1, 256, 17, std)
	c.slow, c.noise, c.varied = false, 0.01*0.01, 100
	x := 16 / 0.002e9 // the dependency serves 16
	lucky := make([]tick, 5)
	for i := range lucky {
		lucky[i] = tick{x: 1.06 * x, t: 17 / (1.06 * x)}
	}
	c.n = 15
	c.pr = probe{from: 17, kind: check, before: lucky}
	stepUntilJudged(t, c, 15, 15/0.002e9)
	if c.n != 17 {
		t.Fatalf("count %d after a check that cost a sixteenth of the throughput, want 17 back", c.n)
	}
	for i := 0; c.n == 17; i++ {
		if i > 3 {
			t.Fatalf("no check after %d steady ticks at 17", i)
		}
		stepOf(c, busyTick(17, x))
	}
	if c.n != 16 {
		t.Fatalf("next check to %d, want 16", c.n)
	}
	for i := 0; c.pr.from != 0 && c.n == 16; i++ {
		if i >= std.MaxJudge {
			t.Fatal("the check was not judged")
		}
		stepOf(c, busyTick(16, x))
	}
	if c.n != 16 || c.pr.from != 0 {
		t.Errorf("count %d after a check of 16 that did what 17 did since coming back, want 16 kept", c.n)
	}
}

// A doubling's check asks whether fewer workers do what its top did; once
// the count does clearly more than that top did (a later doubling paid),
// the check is dropped: in the lab, a check of 28 workers, for a doubling
// from 16 to 32, ran at 41 workers that did 29 % more than 32 had, and
// cost a quarter of the throughput while it lasted.
func TestControllerDropsACheckItsDoublingOutgrew(t *testing.T) {
	x32 := 9400 / 1e9 // items/ns
	for _, tc := range []struct {
		x    float64 // what 41 workers do now
		want int     // the count after two steady ticks
	}{{1.29 * x32, 41}, {1.02 * x32, 28}} {
		c := New(1, 256, 41, std)
		c.slow, c.noise, c.varied, c.hold = false, 0.01*0.01, 100, std.HoldFirst
		c.checks, c.checkDue = []checkAt{{n: 28, top: x32}}, true
		for range std.CheckFresh {
			stepOf(c, busyTick(41, tc.x))
		}
		if c.n != tc.want {
			t.Errorf("41 workers doing %.2f× what 32 did: count %d after %d ticks, want %d", tc.x/x32, c.n, std.CheckFresh, tc.want)
		}
	}
}
