package kafkax_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// broker is the bootstrap address of the tests' broker; brokerDir holds
// its files, for the restart test.
var broker, brokerDir string

// kafkaScript is the repository's broker script.
var kafkaScript, _ = filepath.Abs("../../scripts/kafka")

// startBroker starts a broker with scripts/kafka in a temporary directory
// and returns how to stop it and remove the directory.
func startBroker() (func(), error) {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the tests need a Kafka broker, which needs Java 17+ and Maven; %s is not installed: "+
				"install them with: apt-get install openjdk-17-jre-headless maven", tool)
		}
	}
	dir, err := os.MkdirTemp("", "kafkax-test-")
	if err != nil {
		return nil, err
	}
	brokerDir = dir
	out, err := startCmd().Output()
	if err != nil {
		stopBroker()
		os.RemoveAll(dir)
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("starting a broker with %s: %w", kafkaScript, err)
	}
	broker = strings.TrimSpace(string(out))
	return func() { stopBroker(); os.RemoveAll(dir) }, nil
}

// startCmd runs scripts/kafka start on brokerDir, with a watchdog that
// stops the broker should this process die without stopping it.
func startCmd() *exec.Cmd {
	cmd := exec.Command(kafkaScript, "start", brokerDir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SLUICE_KAFKA_OWNER=%d", os.Getpid()))
	return cmd
}

// restartBroker stops the broker, waits off, and starts it again on the
// same files and ports.
func restartBroker(t testing.TB, off time.Duration) {
	t.Helper()
	stopBroker()
	time.Sleep(off)
	out, err := startCmd().Output()
	if err != nil {
		t.Fatalf("restarting the broker: %v%s", err, scriptSaid(err))
	}
	if got := strings.TrimSpace(string(out)); got != broker {
		t.Fatalf("the broker came back at %s, not %s", got, broker)
	}
}

// scriptSaid returns what a failed scripts/kafka wrote to its standard
// error (the broker's logs' tail among it), to follow a test's failure.
func scriptSaid(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return "; scripts/kafka said:\n" + string(ee.Stderr)
	}
	return ""
}

func stopBroker() {
	if out, err := exec.Command(kafkaScript, "stop", brokerDir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the broker: %v: %s\n", err, out)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// admin returns an admin client closed when the test ends.
func admin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

var topicSeq atomic.Int64

// newTopic creates a topic with a name unique to the run.
func newTopic(t testing.TB, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), topicSeq.Add(1))
	resp, err := admin(t).CreateTopic(ctxT(t, 30*time.Second), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
	return name
}

// produceN stores n records "0".."n-1" in topic, each keyed by its number.
func produceN(t testing.TB, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(broker), kgo.ProducerLinger(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t, time.Minute)
	var failed atomic.Value
	for i := range n {
		id := []byte(strconv.Itoa(i))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: id, Value: id}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every record of topic and counts them by value.
func readAll(t testing.TB, topic string) (map[string]int, []*kgo.Record) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	ends, err := admin(t).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := make(map[string]int)
	var recs []*kgo.Record
	for int64(len(recs)) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of the %d records of %s: %v", len(recs), want, topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Value)]++
			recs = append(recs, r)
		})
	}
	return got, recs
}

// checkEvery checks that ids holds "0".."n-1" at least once each and
// nothing else, and returns how many were stored more than once.
func checkEvery(t testing.TB, ids map[string]int, n int) int {
	t.Helper()
	missing, dup := 0, 0
	for i := range n {
		switch ids[strconv.Itoa(i)] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if missing > 0 || len(ids) != n {
		t.Fatalf("output holds %d distinct values, %d of the %d inputs missing (%d stored more than once)", len(ids), missing, n, dup)
	}
	return dup
}

// lag returns how many records of topic group has not committed past.
func lag(t testing.TB, group, topic string) int64 {
	t.Helper()
	l, err := tryLag(t, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tryLag is lag that returns the error (no group coordinator yet, say).
func tryLag(t testing.TB, group, topic string) (int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := admin(t)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var l int64
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		if !ok || c.At < 0 {
			l += o.Offset
			return
		}
		l += o.Offset - c.At
	})
	return l, nil
}

// eventually polls cond every 10ms until it holds, failing after d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// produceToPartitions stores n records "0".."n-1" in topic, spread evenly
// over its first parts partitions, in order within each.
func produceToPartitions(t testing.TB, topic string, n int, parts int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t, time.Minute)
	for i := range n {
		id := []byte(strconv.Itoa(i))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i) % parts, Key: id, Value: id}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}
