package kafkax_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// TestBrokerRestartMidRunLosesNothing stops the broker while a pipeline
// runs and starts it again on the same files and ports: the source, the
// sink and the commits wait it out, and the run ends with every record
// stored.
func TestBrokerRestartMidRunLosesNothing(t *testing.T) {
	const n, group = 20000, "restart"
	src, in, out, done := startSlowCopy(t, group, n)

	eventually(t, time.Minute, "a quarter of the input settled", func() bool { return src.Stats().Acked >= n/4 })
	at := src.Stats().Acked
	stopBroker()
	time.Sleep(time.Second)
	outB, err := startCmd().Output()
	if err != nil {
		t.Fatalf("restarting the broker: %v", err)
	}
	if got := strings.TrimSpace(string(outB)); got != broker {
		t.Fatalf("the broker came back at %s, not %s", got, broker)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked >= n && at >= n {
		t.Fatalf("the run was over before the restart")
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("after the run: source %+v; lag %d", src.Stats(), lag(t, group, in))
	ids, recs := readAll(t, out)
	dup := checkEvery(t, ids, n)
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("group lag after the run: %d; want 0", l)
	}
	t.Logf("restarted at %d settled; output %d records, %d stored twice; source %+v", at, len(recs), dup, src.Stats())
}

// TestAnOutageKeepsWhatWasSettled stops the broker for a few seconds in the
// middle of a run. franz-go reports the partitions lost at the first
// failed heartbeat; the source holds them, and what settles during the
// outage is committed when the group gives them back, so the run redoes
// next to nothing, and Close reports no error.
func TestAnOutageKeepsWhatWasSettled(t *testing.T) {
	const n, group, bound = 20000, "outage", 100
	src, in, out, done := startSlowCopy(t, group, n)

	eventually(t, time.Minute, "a quarter of the input settled", func() bool { return src.Stats().Acked >= n/4 })
	stopBroker()
	time.Sleep(5 * time.Second)
	if _, err := startCmd().Output(); err != nil {
		t.Fatalf("restarting the broker: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ids, recs := readAll(t, out)
	checkEvery(t, ids, n)
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("group lag after the run: %d; want 0", l)
	}
	dup := len(recs) - n
	t.Logf("output %d records, %d stored twice; source %+v", len(recs), dup, src.Stats())
	if dup > bound {
		t.Fatalf("%d records processed twice; want at most %d", dup, bound)
	}
}

// startSlowCopy starts a pipeline that copies n records from a new topic
// to another, slowly enough that a broker restart lands mid-run, and
// returns its source, its topics, and where p.Wait's error arrives.
func startSlowCopy(t *testing.T, group string, n int) (*kafkax.Source, string, string, chan error) {
	t.Helper()
	in, out := newTopic(t, 4), newTopic(t, 4)
	produceN(t, in, n)
	sink := newSink(t, kafkax.ToTopic(out))
	src := newSource(t, group, []string{in}, kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(1000))
	p := sluice.New(ctxT(t, 3*time.Minute))
	outs := sluice.Map(p, "copy", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		time.Sleep(200 * time.Microsecond)
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	return src, in, out, done
}
