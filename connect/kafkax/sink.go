package kafkax

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
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

	produced atomic.Int64
	failed   atomic.Int64
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
	return &Sink{cl: cl, cfg: cfg}, nil
}

// Client returns the sink's franz-go client.
func (s *Sink) Client() *kgo.Client { return s.cl }

// Close waits for the records still being produced and closes the client.
func (s *Sink) Close() {
	_ = s.cl.Flush(context.Background())
	s.cl.Close()
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
// the records of in with [Sink.Write], one call per chunk as it arrives
// (natural batching, see [sluice.ForEachChunk]: as many records as were
// ready, up to the producer's chunk size). Each call waits a produce round
// trip, so batches of a few records cost far more per record than batches
// of hundreds: give the producing stage [sluice.Chunk] (1000, say) when
// throughput matters. Once a chunk is stored, the core
// settles each record's From. A chunk that fails fails the pipeline unless
// opts settle it ([sluice.Retry], [sluice.DeadLetter], [sluice.SkipErrors]).
func Produce(p *sluice.Pipeline, name string, in sluice.Stream[Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("kafkax: Produce %q: nil Sink", name))
	}
	sluice.ForEachChunk(p, name, in, sink.cfg.workers, sink.Write, opts...)
}

// ProduceBatches starts a sink stage of [SinkWorkers] goroutines that
// produce each batch of in (from [sluice.Batch], say) with [Sink.Write];
// once a batch is stored the core settles the From of every record in it.
// A batch that fails fails the pipeline unless opts settle it.
func ProduceBatches(p *sluice.Pipeline, name string, in sluice.Stream[[]Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("kafkax: ProduceBatches %q: nil Sink", name))
	}
	sluice.ForEach(p, name, in, sink.cfg.workers, sink.Write, opts...)
}

// Write produces recs and returns once the broker has stored every one of
// them, or with an error naming how many it did not store. It hands them
// all to the producer without waiting, then waits for their
// acknowledgements: one round trip per batch per partition leader. The
// producer retries on its own (reconnecting, following a new partition
// leader) for up to [DeliveryTimeout]. Records of one call with the same
// key are stored in order. Write settles nothing: the stage that calls it
// does ([Produce]), or the caller.
func (s *Sink) Write(ctx context.Context, recs []Out) error {
	if len(recs) == 0 {
		return nil
	}
	w := &produced{left: int64(len(recs)), done: make(chan struct{})}
	promise := w.promise // one promise for the batch, not one per record
	// The batch's records come from a pool: the producer keeps them only
	// until their promises have run.
	krs := getRecords(len(recs))
	for i := range recs {
		s.fill(&krs[i], &recs[i])
		s.cl.Produce(ctx, &krs[i], promise)
	}
	select {
	case <-w.done:
		putRecords(krs)
	case <-ctx.Done():
		return ctx.Err() // the producer still runs the promises
	}
	s.produced.Add(int64(len(recs) - w.n))
	if w.err != nil {
		s.failed.Add(int64(w.n))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kafkax: %d of %d records not stored, e.g. one to topic %q: %w", w.n, len(recs), w.topic, w.err)
	}
	return nil
}

// records holds batches of records for Write to reuse.
var records sync.Pool

func getRecords(n int) []kgo.Record {
	if p, ok := records.Get().(*[]kgo.Record); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]kgo.Record, n)
}

// putRecords returns a batch whose promises have all run.
func putRecords(krs []kgo.Record) {
	clear(krs) // no references to the caller's keys and values
	records.Put(&krs)
}

// produced collects the outcomes of one Write's records.
type produced struct {
	left  int64 // promises still to run
	done  chan struct{}
	mu    sync.Mutex
	n     int   // records not stored
	err   error // the first error
	topic string
}

func (w *produced) promise(r *kgo.Record, err error) {
	w.mu.Lock()
	if err != nil {
		if w.n++; w.err == nil {
			w.err, w.topic = err, r.Topic
		}
	}
	w.left--
	last := w.left == 0
	w.mu.Unlock()
	if last {
		close(w.done)
	}
}

func (s *Sink) fill(rec *kgo.Record, o *Out) {
	rec.Topic, rec.Key, rec.Value, rec.Headers = o.Topic, o.Key, o.Value, o.Headers
	if rec.Topic == "" {
		rec.Topic = s.cfg.topic
	}
}

// produceDead produces one dead-letter record and calls done with the
// outcome.
func (s *Sink) produceDead(ctx context.Context, o Out, done func(error)) {
	rec := new(kgo.Record)
	s.fill(rec, &o)
	if rec.Topic == "" {
		done(errors.New("no topic"))
		return
	}
	s.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
		if err == nil {
			s.produced.Add(1)
		} else {
			s.failed.Add(1)
		}
		done(err)
	})
}

// Headers that [DeadLetterOut] adds to a dead-letter record.
const (
	HeaderError     = "kafkax-error"     // the cause's message
	HeaderTopic     = "kafkax-topic"     // the topic the record was read from
	HeaderPartition = "kafkax-partition" // its partition, in decimal
	HeaderOffset    = "kafkax-offset"    // its offset, in decimal
	HeaderAttempts  = "kafkax-attempts"  // how many times it was delivered
)

// DeadLetterOut returns the dead-letter record of m for topic: m's key,
// value and headers, plus the headers [HeaderError], [HeaderTopic],
// [HeaderPartition], [HeaderOffset] and [HeaderAttempts], with From set to
// m's receipt, so that storing it settles m. Use it to send a stream of
// failed records (a [sluice.DeadLetter] stream, say) to a dead-letter topic
// with [Produce]; [DeadLetterTo] does the same for records whose last
// delivery failed.
func DeadLetterOut(m Msg, topic string, cause error) Out {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	if m.r == nil {
		return Out{Topic: topic, From: m.Receipt}
	}
	h := make([]kgo.RecordHeader, 0, len(m.r.Headers)+5)
	h = append(h, m.r.Headers...)
	h = append(h,
		kgo.RecordHeader{Key: HeaderError, Value: []byte(msg)},
		kgo.RecordHeader{Key: HeaderTopic, Value: []byte(m.r.Topic)},
		kgo.RecordHeader{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(m.r.Partition), 10)},
		kgo.RecordHeader{Key: HeaderOffset, Value: strconv.AppendInt(nil, m.r.Offset, 10)},
		kgo.RecordHeader{Key: HeaderAttempts, Value: strconv.AppendInt(nil, int64(max(m.delivery, 1)), 10)},
	)
	return Out{Topic: topic, Key: m.r.Key, Value: m.r.Value, Headers: h, From: m.Receipt}
}
