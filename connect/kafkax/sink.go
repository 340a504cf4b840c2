package kafkax

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Out is a record for a [Sink] to produce.
type Out struct {
	// Topic to produce to; empty for the sink's [ToTopic].
	Topic string
	// Key picks the partition (records with the same key go to the same
	// partition, by the murmur2 hash Kafka's Java client uses); nil spreads
	// keyless records over the partitions.
	Key     []byte
	Value   []byte
	Headers []kgo.RecordHeader
	// From is the receipt of the message this record derives from (a
	// [Msg], or any connector's message); the stage that stores the
	// record settles it. The zero Receipt for none.
	From sluice.Receipt
}

// Origin returns o.From: an Out is a [sluice.Carrier], so the core's
// sinks settle its message once it is stored.
func (o *Out) Origin() sluice.Receipt { return o.From }

// Sink produces records to Kafka with franz-go's idempotent producer
// (acknowledged by every in-sync replica, no duplicates from the
// producer's own retries). Create one with [NewSink]; add it to a pipeline
// with [Produce] or [ProduceBatches], or call [Sink.Write]; [Sink.Close] it
// when done. One Sink may serve several stages and pipelines.
type Sink struct {
	cl  *kgo.Client
	cfg sinkConfig
	tx  *txn // NewTxnSink: the source's transactions; nil: none

	produced atomic.Int64
	failed   atomic.Int64

	log       *logger // Logger; nil: none
	logFailed *tally
}

// NewSink creates a producer for the brokers (a comma-separated list of
// host:port) and checks within a bounded time ([DefaultStartTimeout]
// unless ctx has a deadline) that a broker answers and, with [ToTopic],
// that the topic exists.
func NewSink(ctx context.Context, brokers string, opts ...SinkOption) (*Sink, error) {
	seeds := splitBrokers(brokers)
	if len(seeds) == 0 {
		return nil, fmt.Errorf("kafkax: a sink needs brokers, got %q", brokers)
	}
	cfg := sinkOptions(opts)
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// The sink batches already; lingering would add its wait to
		// every batch's round trip.
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(cfg.deliveryTime),
		kgo.MaxBufferedRecords(DefaultBufferedRecords),
	}, cfg.kopts...)
	g := newLogger(cfg.Logger, "sink", "kafka")
	if g != nil {
		kopts = append(kopts, kgo.WithHooks(g))
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkax: sink: %w", err)
	}
	cctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	var topics []string
	if cfg.topic != "" {
		topics = []string{cfg.topic}
	}
	if err := checkTopics(cctx, cl, brokers, topics); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafkax: sink: %w", err)
	}
	return &Sink{cl: cl, cfg: cfg, log: g, logFailed: newTally(g, slog.LevelWarn, "records not stored")}, nil
}

// Client returns the sink's franz-go client.
func (s *Sink) Client() *kgo.Client { return s.cl }

// Close waits for the records still being produced and closes the
// client; a sink of [NewTxnSink] leaves the client, which is its
// source's, to [Source.Close].
func (s *Sink) Close() {
	if s.tx != nil {
		s.logFailed.flush()
		return
	}
	_ = s.cl.Flush(context.Background())
	s.cl.Close()
	s.logFailed.flush()
}

// SinkStats counts what a [Sink] has done since it was created.
type SinkStats struct {
	Produced int64 // records the broker stored
	Failed   int64 // records the producer gave up on
}

// Stats returns the sink's counts. It is safe to call at any time.
func (s *Sink) Stats() SinkStats {
	return SinkStats{Produced: s.produced.Load(), Failed: s.failed.Load()}
}

// Produce starts a sink stage of [SinkWorkers] goroutines that produce
// the records of in with [Sink.Write]. Each call takes every record
// waiting in the stage's input, up to [DefaultGather] (the core's
// [sluice.Gather]; give Produce another to change it): a stage that keeps
// up writes each chunk as it arrives, and one whose writes wait for the
// broker writes what gathered meanwhile in one go, which costs far less
// per record. Once a record is stored, the core settles its From. A
// write that fails fails the pipeline unless opts settle it
// ([sluice.Retry], [sluice.DeadLetter], [sluice.SkipErrors]); when only
// some of its records were not stored, only those are retried and
// settled (see [sluice.ItemErrors]). The sink's counts ([Sink.Stats])
// are the stage's [sluice.StageStats].Connector (the first such stage's,
// when several stages of p share the sink), so an exporter of the
// pipeline shows them (the sluice.kafka.sink metrics).
func Produce(p *sluice.Pipeline, name string, in sluice.Stream[Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("kafkax: Produce %q: nil Sink", name))
	}
	sluice.ForEachChunk(p, name, in, sink.cfg.workers, sink.Write, gathered(opts)...)
	sink.attach(p, name)
}

// ProduceBatches starts a sink stage of [SinkWorkers] goroutines that
// produce the batches of in (from [sluice.Batch], say): each call takes
// the batches waiting, up to [DefaultGather] records (a batch longer than
// that goes alone), and produces them together. Once a batch is stored
// the core settles the From of every record in it. A batch of which a
// record was not stored fails (its other records may be stored: a retry
// produces the whole batch again); that fails the pipeline unless opts
// settle it.
func ProduceBatches(p *sluice.Pipeline, name string, in sluice.Stream[[]Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("kafkax: ProduceBatches %q: nil Sink", name))
	}
	sluice.ForEachChunk(p, name, in, sink.cfg.workers, sink.writeBatches, gathered(opts)...)
	sink.attach(p, name)
}

// gathered puts the default Gather before opts, which may override it.
func gathered(opts []sluice.StageOption) []sluice.StageOption {
	return append([]sluice.StageOption{sluice.Gather(DefaultGather)}, opts...)
}

// Write produces recs and returns once the broker has stored every one of
// them. It hands them all to the producer without waiting, then waits for
// their acknowledgements: one round trip per batch per partition leader.
// The producer retries on its own (reconnecting, following a new
// partition leader) for up to [DeliveryTimeout]. Records of one call with
// the same key are stored in order. When the producer gave up on every
// record, the error says how many and why; when it stored some and not
// others, the error is a [sluice.ItemErrors] with the error of each record
// not stored, so that a [Produce] stage retries and settles only those.
// Write settles nothing: the stage that calls it does ([Produce]), or the
// caller.
func (s *Sink) Write(ctx context.Context, recs []Out) error {
	w, err := s.produce(ctx, [][]Out{recs}, len(recs))
	if err != nil || w.n == 0 || s.aborting(w) {
		return err
	}
	if w.n == len(recs) {
		return w.whole()
	}
	errs := make(sluice.ItemErrors, len(recs))
	for _, f := range w.bad {
		errs[f.i] = f.err
	}
	return errs
}

// writeBatches produces batches as one Write would their records; a batch
// fails (with [sluice.ItemErrors] when others were stored) when any of its
// records was not stored.
func (s *Sink) writeBatches(ctx context.Context, batches [][]Out) error {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	w, err := s.produce(ctx, batches, n)
	if err != nil || w.n == 0 || s.aborting(w) {
		return err
	}
	errs := make(sluice.ItemErrors, len(batches))
	failed, b, end := 0, 0, len(batches[0])
	for _, f := range w.bad { // by index
		for f.i >= end {
			b++
			end += len(batches[b])
		}
		if errs[b] == nil {
			errs[b] = f.err
			failed++
		}
	}
	if failed == len(batches) {
		return w.whole()
	}
	return errs
}

// aborting reports, for a sink of [NewTxnSink], whether a record was not
// stored because the transaction is no longer open: the epoch aborts, and
// every input it holds is delivered again, so the write counts as done.
func (s *Sink) aborting(w *produced) bool {
	if s.tx == nil {
		return false
	}
	for _, f := range w.bad {
		if txnFatal(f.err) {
			s.tx.abort(fmt.Errorf("producing in the transaction: %w", f.err))
			return true
		}
	}
	return false
}
