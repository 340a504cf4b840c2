package kafkax_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// settledTag starts the commit metadata in which a source records what
// it settled past its settled prefix.
const settledTag = "sluice.settled.2:"

// recordsSettled waits until the group's commit of every partition of
// topic records meta (an offset, then the ranges settled past it).
func recordsSettled(t *testing.T, group, topic string, parts int32, meta string) {
	t.Helper()
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the group's commits: %s", last)
		}
	}()
	eventually(t, time.Minute, "the group's commits record what is settled past their prefix", func() bool {
		offs, err := admin(t).FetchOffsets(context.Background(), group)
		if err != nil {
			last = err.Error()
			return false
		}
		last = ""
		done := true
		for p := range parts {
			o, ok := offs.Lookup(topic, p)
			last += fmt.Sprintf(" %d: %v %d %q;", p, ok, o.At, o.Metadata)
			done = done && ok && o.At == 0 && o.Metadata == settledTag+meta
		}
		return done
	})
}

// holdFirst is a stage body that holds each partition's offset 0 until
// the pipeline stops (then fails it: it stays unsettled) and settles
// every other record, counting each delivery in seen. Its stage takes
// records one at a time (sluice.Chunk(1)), so that a held record holds
// no other.
func holdFirst(mu *sync.Mutex, seen map[[2]int64]int, hold bool) func(context.Context, kafkax.Msg) error {
	return func(ctx context.Context, m kafkax.Msg) error {
		if hold && m.Offset() == 0 && m.Delivery() == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		mu.Lock()
		seen[[2]int64{int64(m.Partition()), m.Offset()}]++
		mu.Unlock()
		return nil
	}
}

// TestARebalanceReplaysOnlyWhatWasNotSettled: member A holds offset 0 of
// each of two partitions and settles the 1,000 records after it; its
// commits record them. Member B joins (one partition moves to it), then A
// stops (the other moves): B delivers each partition's offset 0 again and
// none of the 2,000 records A settled.
func TestARebalanceReplaysOnlyWhatWasNotSettled(t *testing.T) {
	in := newTopic(t, 2)
	const perPart, group = 1001, "settled-rebalance"
	produceToPartitions(t, in, 2*perPart, 2)

	var mu sync.Mutex
	seen := make(map[[2]int64]int)
	run := func(ctx context.Context, hold bool) (*kafkax.Source, chan error) {
		src := newSource(t, group, []string{in}, kafkax.CommitEvery(100*time.Millisecond))
		p := sluice.New(ctx)
		sluice.ForEach(p, "work", kafkax.Read(p, "read", src, sluice.Chunk(1)), 8, holdFirst(&mu, seen, hold))
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		return src, done
	}
	actx, stopA := context.WithCancel(ctxT(t, 2*time.Minute))
	defer stopA()
	a, aDone := run(actx, true)
	recordsSettled(t, group, in, 2, "d1001;1+1000")

	bctx, stopB := context.WithCancel(ctxT(t, 2*time.Minute))
	defer stopB()
	b, bDone := run(bctx, false)
	eventually(t, time.Minute, "B delivered the offset 0 of the partition that moved", func() bool { return b.Stats().Acked >= 1 })
	stopA()
	if err := <-aDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "B delivered both offsets 0", func() bool { return b.Stats().Acked == 2 })
	eventually(t, time.Minute, "the group committed every record", func() bool { return lag(t, group, in) == 0 })
	stopB()
	if err := <-bDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	st := b.Stats()
	mu.Lock()
	defer mu.Unlock()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("partition %d offset %d delivered %d times", k[0], k[1], n)
		}
	}
	if len(seen) != 2*perPart || st.Skipped != 2*(perPart-1) || st.Received != 2 || st.Redelivered != 2 {
		t.Fatalf("%d records delivered, B %+v; want all %d once, B skipping %d and receiving the 2 offsets 0, A's deliveries, again",
			len(seen), st, 2*perPart, 2*(perPart-1))
	}
}

// holderEnv, when set, makes the test binary run as the member of
// TestAKillAfterACommitReplaysOnlyWhatWasNotSettled that holds offset 0;
// it holds "broker topic group".
const holderEnv = "KAFKAX_TEST_HOLDER"

func runHolder() int {
	var brk, in, group string
	if _, err := fmt.Sscan(os.Getenv(holderEnv), &brk, &in, &group); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := kafkax.NewSource(ctx, brk, group, []string{in}, kafkax.CommitEvery(100*time.Millisecond),
		kafkax.WithClient(kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	defer src.Close()
	var mu sync.Mutex
	p := sluice.New(ctx)
	sluice.ForEach(p, "work", kafkax.Read(p, "read", src, sluice.Chunk(1)), 8, holdFirst(&mu, make(map[[2]int64]int), true))
	err = p.Wait() // until the test kills it
	fmt.Fprintln(os.Stderr, "holder:", err)
	return 1
}

// TestAKillAfterACommitReplaysOnlyWhatWasNotSettled: a member (a process
// of its own) holds offset 0 and settles the 1,000 records after it; once
// its commit records them it is killed with SIGKILL. The next member
// delivers offset 0 and none of the 1,000.
func TestAKillAfterACommitReplaysOnlyWhatWasNotSettled(t *testing.T) {
	in := newTopic(t, 1)
	const n, group = 1001, "settled-kill"
	produceN(t, in, n)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+fmt.Sprint(broker, " ", in, " ", group))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	recordsSettled(t, group, in, 1, "d1001;1+1000")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the holder ended with %v, not by SIGKILL\n%s", err, log.String())
	}

	var got []int64
	src := newSource(t, group, []string{in}, kafkax.StopWhenCaughtUp())
	p := sluice.New(ctxT(t, 2*time.Minute))
	sluice.ForEach(p, "work", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		got = append(got, m.Offset())
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); len(got) != 1 || got[0] != 0 || st.Skipped != n-1 || st.Redelivered != 1 {
		t.Fatalf("delivered offsets %v…, source %+v; want offset 0 only, redelivered (the killed member had delivered it), %d skipped", got[:min(len(got), 5)], st, n-1)
	}
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("lag %d; want 0", l)
	}
}
