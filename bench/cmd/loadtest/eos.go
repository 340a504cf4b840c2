package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// `loadtest kafka --exactly-once`: a Kafka → Kafka copy pipeline (read →
// stamp → produce) in each delivery mode, side by side in one run:
//
//   - throughput over a backlog, the modes interleaved round by round (a
//     fresh group each time, timed from the first record to the end of the
//     final commit);
//   - the latency from the stamp (just after the source emitted the
//     record) to the moment a read-committed consumer of the output sees
//     it, at a sustained rate.
//
// A record's value is eosHeader bytes of figures and padding: the run it
// belongs to, its sequence number in that run, the time it was produced
// and the time the pipeline stamped it (zero in the input).

const (
	eosValueSize = 100
	eosHeader    = 32
)

// eosMode is one way of running the copy pipeline.
type eosMode struct {
	name  string
	short string // in the rounds' lines
	src   func(group string) []kafkax.SourceOption
	// newSink makes the sink of src; nil for kafkax.NewSink.
	newSink func(ctx context.Context, brokers string, src *kafkax.Source, opts ...kafkax.SinkOption) (*kafkax.Sink, error)
}

// plainSink is the sink of the at-least-once modes: a client of its own.
func plainSink(ctx context.Context, brokers string, _ *kafkax.Source, opts ...kafkax.SinkOption) (*kafkax.Sink, error) {
	return kafkax.NewSink(ctx, brokers, opts...)
}

// eosModes are the modes of a run: at-least-once reading committed (the
// default) and uncommitted records, and transactional (exactly once),
// its transactional ID the group's name (unique: each run has a group of
// its own).
func eosModes(f kafkaFlags) []eosMode {
	return []eosMode{
		{name: "at-least-once, read committed", short: "alo-rc", newSink: plainSink},
		{name: "at-least-once, read uncommitted", short: "alo-ru", newSink: plainSink,
			src: func(string) []kafkax.SourceOption { return []kafkax.SourceOption{kafkax.ReadUncommitted()} }},
		{name: "transactional, epoch " + f.epoch.String(), short: "txn",
			src: func(group string) []kafkax.SourceOption {
				return []kafkax.SourceOption{kafkax.Transactional(group, f.epoch)}
			},
			newSink: func(ctx context.Context, _ string, src *kafkax.Source, opts ...kafkax.SinkOption) (*kafkax.Sink, error) {
				return kafkax.NewTxnSink(ctx, src, opts...)
			}},
	}
}

// txnFigures describes a transactional source's epochs: how many
// committed and aborted, their mean length and mean commit time.
func txnFigures(st kafkax.SourceStats) string {
	if st.TxnCommitted+st.TxnAborted == 0 {
		return ""
	}
	n := time.Duration(max(st.TxnCommitted, 1))
	return fmt.Sprintf("%d transactions committed, %d aborted; epoch %s, commit %s (means)",
		st.TxnCommitted, st.TxnAborted, ms(st.TxnEpochTime/n), ms(st.TxnCommitTime/n))
}

// demoEOS runs `loadtest kafka --exactly-once`.
func demoEOS(ctx context.Context, in *interrupts, f kafkaFlags, stdout io.Writer) error {
	drain := in.Draining()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(drain, cancel)()
	inTopic, outTopic := f.name+"-eos-in", f.name+"-eos-out"
	modes := eosModes(f)
	topics := []string{inTopic, outTopic}
	for _, m := range modes {
		topics = append(topics, f.name+"-eos-rate-"+m.short) // each latency run's input: no backlog of another's
	}
	fmt.Fprintf(stdout, "conditions: %s\nload before: %s\n", conditions(), loadavg())
	fmt.Fprintf(stdout, "Kafka at %s; topics %s, %s-eos-rate-MODE → %s, %d partitions each; epoch %s\n", f.kafka, inTopic, f.name, outTopic, f.partitions, f.epoch)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.kafka, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := onkafka.ResetTopics(ctx, adm, f.partitions, f.name+"-eos", topics...); err != nil {
		return err
	}

	start := time.Now()
	if err := produceBacklog(ctx, f.kafka, inTopic, f.events); err != nil {
		return fmt.Errorf("producing the backlog: %w", err)
	}
	fmt.Fprintf(stdout, "backlog: %d records of %d bytes in %s, produced in %.1fs\n", f.events, eosValueSize, inTopic, time.Since(start).Seconds())
	for _, m := range modes { // the first run of each warms the broker's cache and this process: not counted
		if _, err := copyBacklog(ctx, f, m, inTopic, outTopic, fmt.Sprintf("%s-eos-warm-%s", f.name, m.short)); err != nil {
			return fmt.Errorf("%s, warm-up: %w", m.name, err)
		}
	}
	fmt.Fprintf(stdout, "\nthroughput over the backlog after a warm-up run of each mode, %d rounds, modes interleaved (order rotated each round), figures per round:\n", f.rounds)
	rates := make([][]float64, len(modes))
	cpus := make([][]float64, len(modes))
	txns := make([]string, len(modes)) // the last round's
	for r := range f.rounds {
		fmt.Fprintf(stdout, "  round %d:", r+1)
		for j := range modes {
			i := (j + r) % len(modes)
			res, err := copyBacklog(ctx, f, modes[i], inTopic, outTopic, fmt.Sprintf("%s-eos-%d-%s", f.name, r, modes[i].short))
			if err != nil {
				fmt.Fprintln(stdout)
				return fmt.Errorf("%s, round %d: %w", modes[i].name, r+1, err)
			}
			rates[i] = append(rates[i], res.perSec())
			txns[i] = txnFigures(res.src)
			cpus[i] = append(cpus[i], res.cpuPerEvent())
			fmt.Fprintf(stdout, "  %s %s/s %.1fµs", modes[i].short, si(res.perSec()), res.cpuPerEvent())
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout, "medians (min … max), CPU of this process per record:")
	med, cpu := make([]float64, len(modes)), make([]float64, len(modes))
	for i, m := range modes {
		xs, cs := slices.Sorted(slices.Values(rates[i])), slices.Sorted(slices.Values(cpus[i]))
		med[i], cpu[i] = xs[len(xs)/2], cs[len(cs)/2]
		fmt.Fprintf(stdout, "  %-34s %8s records/s (%s … %s)  %.1f µs/record\n", m.name, si(med[i]), si(xs[0]), si(xs[len(xs)-1]), cs[len(cs)/2])
		if txns[i] != "" {
			fmt.Fprintf(stdout, "  %-34s last round: %s\n", "", txns[i])
		}
	}
	overlap := slices.Min(rates[0]) <= slices.Max(rates[1]) && slices.Min(rates[1]) <= slices.Max(rates[0])
	fmt.Fprintf(stdout, "read committed vs read uncommitted (at-least-once): %+.1f %% throughput (medians; the ranges %s), %+.1f %% CPU per record\n",
		100*(med[0]/med[1]-1), map[bool]string{true: "overlap", false: "do not overlap"}[overlap], 100*(cpu[0]/cpu[1]-1))
	for i := 2; i < len(modes); i++ {
		fmt.Fprintf(stdout, "%s / at-least-once (read committed): %.0f %% (target ≥ 70 %%: %s)\n", modes[i].name, 100*med[i]/med[0], met(med[i] >= 0.7*med[0]))
	}

	fmt.Fprintf(stdout, "\nlatency, stamped after the source → visible to a read-committed consumer of %s, at %d records/s: %s warm-up, then a %s window\n",
		outTopic, f.rate, f.warmup, f.duration)
	for i, m := range modes {
		if i == 1 {
			continue // the isolation of the source changes nothing downstream
		}
		res, err := latencyAtRate(ctx, f, m, f.name+"-eos-rate-"+m.short, outTopic, uint64(i+1), stdout)
		if err != nil {
			return fmt.Errorf("%s, latency: %w", m.name, err)
		}
		res.print(stdout, m, f)
	}
	fmt.Fprintf(stdout, "load after: %s\n", loadavg())
	return nil
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadavg is the machine's load averages, as uptime shows them.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fs := strings.Fields(string(b))
	if len(fs) < 3 {
		return "unknown"
	}
	return "load average " + strings.Join(fs[:3], ", ")
}

// eosValue fills v (eosValueSize bytes) with run, seq and the produce
// time.
func eosValue(v []byte, run, seq uint64) []byte {
	v = append(v[:0], make([]byte, eosValueSize)...)
	binary.BigEndian.PutUint64(v[0:], run)
	binary.BigEndian.PutUint64(v[8:], seq)
	binary.BigEndian.PutUint64(v[16:], uint64(time.Now().UnixNano()))
	return v
}

// produceBacklog stores n records of run 0 in topic.
func produceBacklog(ctx context.Context, brokers, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Int64
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i)), Value: eosValue(nil, 0, uint64(i))},
			func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d records not stored", n)
	}
	return nil
}

// copyRun is what one run of the copy pipeline measured.
type copyRun struct {
	src     kafkax.SourceStats
	records int64
	wall    time.Duration // first record stamped → pipeline ended, final commit included
	cpu     time.Duration // this process, over the same span
}

func (r copyRun) perSec() float64      { return float64(r.records) / r.wall.Seconds() }
func (r copyRun) cpuPerEvent() float64 { return r.cpu.Seconds() * 1e6 / float64(max(r.records, 1)) }

// copyPipeline is the copy pipeline of one mode: read → stamp → produce.
type copyPipeline struct {
	p        *sluice.Pipeline
	src      *kafkax.Source
	sink     *kafkax.Sink
	first    atomic.Int64 // unix nanos of the first record stamped
	firstCPU atomic.Int64
}

// startCopy starts the copy pipeline of mode, reading topic in as group
// and producing to out.
func startCopy(ctx context.Context, f kafkaFlags, mode eosMode, in, out, group string, extra ...kafkax.SourceOption) (*copyPipeline, error) {
	srcOpts := append([]kafkax.SourceOption{kafkax.MaxInFlight(f.inflight)}, extra...)
	if mode.src != nil {
		srcOpts = append(srcOpts, mode.src(group)...)
	}
	src, err := kafkax.NewSource(ctx, f.kafka, group, []string{in}, srcOpts...)
	if err != nil {
		return nil, err
	}
	sink, err := mode.newSink(ctx, f.kafka, src, kafkax.ToTopic(out))
	if err != nil {
		src.Close()
		return nil, err
	}
	c := &copyPipeline{p: sluice.New(ctx), src: src, sink: sink}
	outs := sluice.Map(c.p, "stamp", kafkax.Read(c.p, "read", src), 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		now := time.Now().UnixNano()
		if c.first.Load() == 0 && c.first.CompareAndSwap(0, now) {
			c.firstCPU.Store(int64(cpuTime()))
		}
		v := append([]byte(nil), m.Value()...)
		if len(v) >= eosHeader {
			binary.BigEndian.PutUint64(v[24:], uint64(now))
		}
		return kafkax.Out{Key: m.Key(), Value: v, From: m.Receipt}, nil
	})
	kafkax.Produce(c.p, "write", outs, sink)
	return c, nil
}

// close closes the sink, then the source (its final commit).
func (c *copyPipeline) close() error {
	c.sink.Close()
	return c.src.Close()
}

// copyBacklog copies the whole of topic in to out with mode, as group,
// and checks that every record was settled and produced.
func copyBacklog(ctx context.Context, f kafkaFlags, mode eosMode, in, out, group string) (copyRun, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, err := startCopy(ctx, f, mode, in, out, group, kafkax.StopWhenCaughtUp())
	if err != nil {
		return copyRun{}, err
	}
	werr := c.p.Wait()
	cerr := c.close()
	end, endCPU := time.Now(), cpuTime()
	if werr != nil || cerr != nil {
		return copyRun{}, fmt.Errorf("pipeline: %v; close: %v", werr, cerr)
	}
	st, ss := c.src.Stats(), c.sink.Stats()
	// Each record settled and produced once, unless an epoch aborted:
	// then its records were delivered, and produced, again.
	n := int64(f.events)
	if bad := st.Acked < n || ss.Produced < n || c.first.Load() == 0; bad || st.TxnAborted == 0 && (st.Acked != n || ss.Produced != n) {
		return copyRun{}, fmt.Errorf("%d records in the backlog, but %d settled and %d produced (source %+v)", f.events, st.Acked, ss.Produced, st)
	}
	return copyRun{src: st, records: n, wall: end.Sub(time.Unix(0, c.first.Load())), cpu: endCPU - time.Duration(c.firstCPU.Load())}, nil
}
