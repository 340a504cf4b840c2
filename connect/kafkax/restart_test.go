package kafkax_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

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
	restartBroker(t, time.Second)
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
		t.Fatalf("restarting the broker: %v%s", err, scriptSaid(err))
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

// heldThroughAnOutage runs a one-partition source over 2,000 records that
// acknowledges every record but offset 100 at once and holds that one;
// then it stops the broker for 2 s and starts it again. franz-go reports
// the partition lost, and when the group gives it back it fetches the
// group's offsets, slowly (a coordinator that takes 3 s: an
// AdjustFetchOffsetsFn that waits, then returns them unchanged). Offset
// 100 is acknowledged at the end of that wait: between the member's
// OnPartitionsAssigned and the moment franz-go resets its offsets to the
// fetched ones. It returns the source, its topic, the
// pipeline and where p.Wait's error arrives, once the fetch is over.
func heldThroughAnOutage(t *testing.T, group string, opts ...kafkax.SourceOption) (*kafkax.Source, string, *sluice.Pipeline, chan error) {
	t.Helper()
	const n, hold = 2000, 100
	in := newTopic(t, 1)
	produceN(t, in, n)
	var (
		src       *kafkax.Source
		held      = make(chan sluice.Receipt, 1)
		restarted atomic.Bool
		fetched   = make(chan error, 1)
	)
	adjust := func(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		if !restarted.Load() {
			return offs, nil
		}
		select {
		case r := <-held:
			time.Sleep(3 * time.Second)
			r.Ack()
			fetched <- nil
		default: // a later fetch
		}
		return offs, nil
	}
	src = newSource(t, group, []string{in}, append(opts, kafkax.WithClient(kgo.AdjustFetchOffsetsFn(adjust)))...)
	p := sluice.New(ctxT(t, 3*time.Minute))
	sluice.ForEach(p, "work", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		if m.Offset() == hold && m.Delivery() == 1 {
			m.Expect(2) // ForEach acknowledges one; the test the other
			held <- m.Receipt
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	eventually(t, time.Minute, "every record but one acknowledged", func() bool { return src.Stats().Acked == n-1 && len(held) == 1 })

	stopBroker()
	time.Sleep(2 * time.Second)
	restarted.Store(true)
	if _, err := startCmd().Output(); err != nil {
		t.Fatalf("restarting the broker: %v%s", err, scriptSaid(err))
	}
	select {
	case err := <-fetched:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the group did not give the partition back within a minute of the restart (source %+v)", src.Stats())
	}
	if st := src.Stats(); st.Acked != n || st.InFlight != 0 {
		t.Fatalf("source %+v after the outage; want all %d acknowledged", st, n)
	}
	return src, in, p, done
}

// TestASettlementDuringTheOffsetFetchAfterAnOutageIsCommitted: an offset
// settled while the group's offsets are fetched for a partition given
// back after an outage stays owed until a commit of it succeeds. Each
// subtest checks one way it is paid: StopWhenCaughtUp stops only once the
// group has committed it, the periodic commit commits it, Close commits
// it.
func TestASettlementDuringTheOffsetFetchAfterAnOutageIsCommitted(t *testing.T) {
	t.Run("StopWhenCaughtUp", func(t *testing.T) {
		const group = "fetch-window-caught-up"
		src, in, _, done := heldThroughAnOutage(t, group, kafkax.CommitEvery(time.Hour), kafkax.StopWhenCaughtUp())
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the source did not stop within 30 s (source %+v, lag %d)", src.Stats(), lag(t, group, in))
		}
		if l := lag(t, group, in); l != 0 {
			t.Fatalf("the source stopped with the group's lag at %d; want 0", l)
		}
	})
	t.Run("CommitEvery", func(t *testing.T) {
		const group = "fetch-window-periodic"
		src, in, p, done := heldThroughAnOutage(t, group, kafkax.CommitEvery(200*time.Millisecond))
		defer func() {
			p.Drain()
			<-done
		}()
		eventually(t, 30*time.Second, "the periodic commit covers every record", func() bool {
			l, err := tryLag(t, group, in)
			return err == nil && l == 0
		})
		_ = src
	})
	t.Run("Close", func(t *testing.T) {
		const group = "fetch-window-close"
		src, in, p, done := heldThroughAnOutage(t, group, kafkax.CommitEvery(time.Hour))
		p.Drain()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := src.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if l := lag(t, group, in); l != 0 {
			t.Fatalf("Close returned nil with the group's lag at %d; want 0", l)
		}
	})
}
