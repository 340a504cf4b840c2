package kafkax_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// workerEnv, when set, makes the test binary run as one pipeline worker
// of TestScaleOut… instead of running tests; it holds
// "broker in out group".
const workerEnv = "KAFKAX_TEST_WORKER"

func runWorker() int {
	var brk, in, out, group string
	if _, err := fmt.Sscan(os.Getenv(workerEnv), &brk, &in, &out, &group); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	if err := work(brk, in, out, group); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func work(brk, in, out, group string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := kafkax.NewSource(ctx, brk, group, []string{in},
		kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(2000),
		kafkax.WithClient(kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond)))
	if err != nil {
		return err
	}
	defer src.Close()
	sink, err := kafkax.NewSink(ctx, brk, kafkax.ToTopic(out))
	if err != nil {
		return err
	}
	defer sink.Close()
	p := sluice.New(ctx)
	// An unordered Map with random delays settles records out of order,
	// so the kill finds partitions with settled records after unsettled
	// ones; it is slow enough that the kill lands mid-run.
	outs := sluice.Map(p, "copy", kafkax.Read(p, "read", src), 8, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		time.Sleep(time.Duration(rand.IntN(1600)) * time.Microsecond)
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	err = p.Wait()
	fmt.Printf("pid %d: source %+v sink %+v\n", os.Getpid(), src.Stats(), sink.Stats())
	return err
}

func TestScaleOutSurvivesAWorkerKilledMidRun(t *testing.T) {
	in, out := newTopic(t, 6), newTopic(t, 6)
	const n, workers, group = 30000, 3, "scale"
	produceN(t, in, n)

	cmds := make([]*exec.Cmd, workers)
	logs := make([]*bytes.Buffer, workers)
	exited := make(chan int, workers)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"="+fmt.Sprint(broker, " ", in, " ", out, " ", group))
		logs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = logs[i], logs[i]
		// Should this test die, its workers die with it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	waited := make([]error, workers)
	for i, cmd := range cmds {
		go func() { waited[i] = cmd.Wait(); exited <- i }()
	}
	defer func() { // on failure, leave nothing running
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
		}
	}()

	eventually(t, 60*time.Second, "a third of the input committed", func() bool {
		l, err := tryLag(t, group, in)
		return err == nil && l <= 2*n/3
	})
	killedAt := n - lag(t, group, in)
	if err := cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(90 * time.Second)
	for range workers {
		select {
		case <-exited:
		case <-deadline:
			t.Fatal("workers still running after 90s")
		}
	}
	if ws, ok := cmds[0].ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("worker 0 ended with %v, not by SIGKILL; had it finished before the kill?\n%s", waited[0], logs[0])
	}
	for i := 1; i < workers; i++ {
		if waited[i] != nil {
			t.Fatalf("worker %d: %v\n%s", i, waited[i], logs[i])
		}
		t.Logf("worker %d: %s", i, bytes.TrimSpace(logs[i].Bytes()))
	}
	if killedAt >= n {
		t.Fatalf("the run was over (%d committed) before the kill", killedAt)
	}
	ids, recs := readAll(t, out)
	dup := checkEvery(t, ids, n)
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("group lag after the run: %d; want 0", l)
	}
	// The key picks the partition: a record produced twice (by the killed
	// worker, then by the partition's new owner) lands where the first did.
	where := make(map[string]int32)
	for _, r := range recs {
		if p, ok := where[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s stored in partitions %d and %d", r.Key, p, r.Partition)
		}
		where[string(r.Key)] = r.Partition
	}
	t.Logf("killed worker 0 at %d committed; output %d records, %d distinct, %d stored twice or more", killedAt, len(recs), len(ids), dup)
}
