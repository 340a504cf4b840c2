package natsx_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// workerEnv, when set, makes the test binary run as one pipeline worker
// of TestScaleOut… instead of running tests; workerURLEnv names the server.
const (
	workerEnv    = "NATSX_TEST_WORKER"
	workerURLEnv = "NATSX_TEST_URL"
)

// runWorker is one process of the scale-out test: it reads IN through the
// shared durable consumer "workers", copies each message to OUT with its
// ID, and exits once the consumer is drained.
func runWorker() int {
	if err := work(os.Getenv(workerURLEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func work(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := natsx.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	src, err := natsx.NewSource(ctx, js, "IN", "workers", workerSourceOptions()...)
	if err != nil {
		return err
	}
	sink, err := natsx.NewSink(ctx, js, natsx.ToStream("OUT"))
	if err != nil {
		return err
	}
	defer sink.Close()
	p := sluice.New(ctx)
	slow := throttle(4)
	outs := sluice.Map(p, "copy", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		slow()
		return natsx.Out{Subject: "out." + m.ID(), Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	natsx.Publish(p, "publish", outs, sink)
	err = p.Wait()
	fmt.Printf("pid %d: source %+v sink %+v\n", os.Getpid(), src.Stats(), sink.Stats())
	return err
}

// workerSourceOptions is the consumer configuration every worker shares.
func workerSourceOptions() []natsx.SourceOption {
	return []natsx.SourceOption{
		natsx.AckWait(time.Second), natsx.MaxInFlight(1000), natsx.FetchBatch(100),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(50 * time.Millisecond),
	}
}

func TestScaleOutSurvivesAWorkerKilledMidRun(t *testing.T) {
	_, url, _ := embedded(t)
	_, js := connect(t, url)
	makeStream(t, js, "IN", "in.>")
	makeStream(t, js, "OUT", "out.>")
	const n, workers = 12000, 3
	publishN(t, js, "in.x", n)
	out, err := js.Stream(ctxT(t, 5*time.Second), "OUT")
	if err != nil {
		t.Fatal(err)
	}

	cmds := make([]*exec.Cmd, workers)
	logs := make([]*bytes.Buffer, workers)
	exited := make(chan int, workers)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"=1", workerURLEnv+"="+url)
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

	stored := func() uint64 {
		info, err := out.Info(ctxT(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	eventually(t, 60*time.Second, "a third of the output stored", func() bool { return stored() >= n/3 })
	killedAt := stored()
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
		t.Fatalf("worker 0 ended with %v, not by SIGKILL; it had finished before it was killed?\n%s", waited[0], logs[0])
	}
	for i := 1; i < workers; i++ {
		if waited[i] != nil {
			t.Fatalf("worker %d: %v\n%s", i, waited[i], logs[i])
		}
		t.Logf("worker %d: %s", i, bytes.TrimSpace(logs[i].Bytes()))
	}
	if killedAt >= n {
		t.Fatalf("the run was over (%d stored) before the kill", killedAt)
	}

	ids, total := storedIDs(t, js, "OUT")
	checkEvery(t, ids, n)
	ci := consumerState(t, js, "IN", "workers")
	if ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: %d pending, %d awaiting ack; want 0, 0", ci.NumPending, ci.NumAckPending)
	}
	// The messages worker 0 held when it was killed are delivered again
	// to the others, which count them as redelivered.
	var redelivered int
	for i := 1; i < workers; i++ {
		m := regexp.MustCompile(`Redelivered:(\d+)`).FindSubmatch(logs[i].Bytes())
		if m == nil {
			t.Fatalf("worker %d printed no source stats:\n%s", i, logs[i])
		}
		k, _ := strconv.Atoi(string(m[1]))
		redelivered += k
	}
	if redelivered == 0 {
		t.Fatalf("the surviving workers counted no redelivered message, want those worker 0 held when killed")
	}
	t.Logf("killed worker 0 at %d stored; output %d messages; consumer delivered %d; the others counted %d redelivered",
		killedAt, total, ci.Delivered.Consumer, redelivered)
}
