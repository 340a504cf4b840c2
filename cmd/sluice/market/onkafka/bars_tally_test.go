package onkafka

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// clickhouse-go's init starts a clock goroutine that never ends.
		goleak.IgnoreTopFunction("github.com/ClickHouse/clickhouse-go.init.0.func1"))
}

// t0 is a window end, in unix nanoseconds; at(d) a moment d after it.
const t0 = int64(1_000 * time.Second)

func at(d time.Duration) time.Time { return time.Unix(0, t0+int64(d)) }

// A bar's latency is split at the tick that lifted the least of the
// partitions' watermarks past its window's end: that tick's arrival, its
// produce time, and the arrival of the first partition's tick past it.
func TestBarsTallySplitsALatencyAtTheTickThatLiftedTheWatermark(t *testing.T) {
	var cfg KafkaConfig
	tally := TallyBars(&cfg)
	ms := time.Millisecond
	tick := func(part int32, ts, produced, arrived time.Duration) {
		cfg.Bars.OnTick(part, t0+int64(ts), at(produced), at(arrived))
	}
	tick(0, 50*ms, 60*ms, 70*ms)
	tick(1, 200*ms, 210*ms, 220*ms) // partition 1's watermark (100 ms) passes t0; 0's (−50 ms) does not
	tick(1, 150*ms, 300*ms, 310*ms) // behind its partition's newest: no change
	tick(0, 300*ms, 320*ms, 350*ms) // the least is now 200 ms: the watermark, 100 ms, passes t0
	bar := market.Bar{Symbol: "AAPL", Start: t0 - int64(market.BarWidth), Trades: 3}
	cfg.Bars.OnStored([]market.Bar{bar}, []time.Time{at(352 * ms)}, at(380*ms))
	update := bar
	update.Revision = 1
	cfg.Bars.OnStored([]market.Bar{update}, []time.Time{at(900 * ms)}, at(950*ms))
	cfg.Bars.OnLate()

	for _, c := range []struct {
		what      string
		got, want time.Duration
	}{
		{"window end → emitted", tally.emitted.Max(), 352 * ms},
		{"window end → committed", tally.commits.Max(), 380 * ms},
		{"watermark passed → emitted", tally.inStage.Max(), 2 * ms},
		{"the lifting tick's transport", tally.transport.Max(), 30 * ms},
		{"window end → the lifting tick produced", tally.toLift.Max(), 320 * ms},
		{"first partition past the end → last", tally.spread.Max(), 130 * ms},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	if stored, updates, late := tally.Counts(); stored != 2 || updates != 1 || late != 1 {
		t.Errorf("counts: got %d stored, %d updates, %d late, want 2, 1, 1", stored, updates, late)
	}
	var b strings.Builder
	tally.Print(&b, BarNamesFor("x"))
	if out := b.String(); strings.Count(out, "\n") != 4 || !strings.HasPrefix(out, "bars: 2 stored in ClickHouse table x_bars and produced to x-bars (1 of them updates by late events), 1 events too late for any bar produced to x-late\n") {
		t.Errorf("Print wrote:\n%s", out)
	}
}

// The windows a flush closes, and those that end before CountFrom's
// start, are counted as stored and in no latency figure.
func TestBarsTallyLeavesFlushedAndWarmUpWindowsOutOfTheLatencies(t *testing.T) {
	var cfg KafkaConfig
	tally := TallyBars(&cfg)
	ms := time.Millisecond
	tally.CountFrom(at(0))
	tally.Flushing(t0 + int64(30*time.Minute))
	cfg.Bars.OnTick(0, t0+int64(150*ms), at(160*ms), at(170*ms))      // the first tick: the watermark is t0 + 50 ms
	cfg.Bars.OnTick(0, t0+int64(1150*ms), at(1160*ms), at(1170*ms))   // passes t0 + 1 s
	cfg.Bars.OnTick(0, t0+int64(time.Hour), at(1200*ms), at(1210*ms)) // a flush's: passes t0 + 2 s and on
	w := int64(market.BarWidth)
	bars := []market.Bar{
		{Symbol: "AAPL", Start: t0 - 2*w, Trades: 1}, // ends at t0 − 1 s, before CountFrom's start
		{Symbol: "AAPL", Start: t0 - w, Trades: 1},   // ends at t0, before the first tick: no split
		{Symbol: "AAPL", Start: t0, Trades: 1},       // ends at t0 + 1 s: counted, split
		{Symbol: "AAPL", Start: t0 + w, Trades: 1},   // ends at t0 + 2 s: closed by the flush
	}
	cfg.Bars.OnStored(bars, []time.Time{at(100 * ms), at(300 * ms), at(1175 * ms), at(2500 * ms)}, at(2600*ms))
	if stored, _, _ := tally.Counts(); stored != 4 {
		t.Errorf("stored: got %d, want 4", stored)
	}
	// Counted, the window before CountFrom's start would make the largest
	// end → emitted 1.1 s, the flushed one 500 ms.
	if got := tally.emitted.Max(); got != 300*ms {
		t.Errorf("window end → emitted, max: got %v, want 300ms (the window ending at t0)", got)
	}
	if got := tally.inStage.Max(); got != 5*ms {
		t.Errorf("watermark passed → emitted, max: got %v, want 5ms (the window ending at t0 + 1 s)", got)
	}
}
