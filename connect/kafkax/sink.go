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
	// From is the record this one was derived from, acknowledged
	// ([Msg.Ack]) once the broker has stored this one; the zero Msg for
	// none. When one record yields several, call [Msg.Expect] with their
	// number before handing them on: it is then committed after the last
	// of them is stored.
	From Msg
}

// Sink produces records to Kafka with franz-go's idempotent producer
// (acknowledged by every in-sync replica, no duplicates from the
// producer's own retries) and settles the records they were derived from
// once the broker has stored them. Create one with [NewSink]; add it to a
// pipeline with [Produce] or [ProduceBatches]; [Sink.Close] it when done.
// One Sink may serve several stages and pipelines.
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
		kgo.MaxBufferedRecords(max(10000, 2*cfg.workers*cfg.batch)),
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

// Close waits for the records still being produced (their promises run,
// settling what they came from) and closes the client.
func (s *Sink) Close() {
	_ = s.cl.Flush(context.Background())
	s.cl.Close()
}

// SinkStats counts what a [Sink] has done since it was created.
type SinkStats struct {
	Produced int64 // records the broker stored
	Failed   int64 // records given up on (the pipeline failed)
}

// Stats returns the sink's counts. It is safe to call at any time.
func (s *Sink) Stats() SinkStats {
	return SinkStats{Produced: s.produced.Load(), Failed: s.failed.Load()}
}

// Produce starts a sink stage that groups the records of in into batches
// ([ProduceBatch]) and produces them with [ProduceBatches]: one batching
// goroutine plus [SinkWorkers] producing goroutines.
func Produce(p *sluice.Pipeline, name string, in sluice.Stream[Out], sink *Sink) {
	if sink == nil {
		panic(fmt.Sprintf("kafkax: Produce %q: nil Sink", name))
	}
	batches := sluice.Batch(p, name+"/batch", in, sink.cfg.batch, sink.cfg.batchWait)
	ProduceBatches(p, name, batches, sink)
}

// ProduceBatches starts a sink stage of [SinkWorkers] goroutines, each
// producing one batch at a time: it hands every record of the batch to the
// producer without waiting, then waits until the broker has acknowledged
// all of them; each record's From is acknowledged as its own
// acknowledgement arrives. The producer retries on its own (reconnecting,
// following a new partition leader) for up to [DeliveryTimeout]; a record
// it gives up on fails the pipeline, and its From stays unsettled, so it is
// not committed and is read again by the next run. Records of different
// batches may be stored in any order; records of one batch with the same
// key are stored in batch order.
func ProduceBatches(p *sluice.Pipeline, name string, in sluice.Stream[[]Out], sink *Sink) {
	if sink == nil {
		panic(fmt.Sprintf("kafkax: ProduceBatches %q: nil Sink", name))
	}
	sluice.ForEach(p, name, in, sink.cfg.workers, sink.produce)
}

// batchWait collects the promises of one batch.
type batchWait struct {
	left atomic.Int64
	done chan struct{}
	mu   sync.Mutex
	n    int   // records not stored
	err  error // the first error
	at   *kgo.Record
}

func (s *Sink) produce(ctx context.Context, batch []Out) error {
	if len(batch) == 0 {
		return nil
	}
	w := &batchWait{done: make(chan struct{})}
	w.left.Store(int64(len(batch)))
	// One allocation for the batch's records rather than one each; the
	// producer keeps them until their promises have run.
	recs := make([]kgo.Record, len(batch))
	for i := range batch {
		o := &batch[i]
		from := o.From
		rec := &recs[i]
		s.fill(rec, o)
		s.cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				s.failed.Add(1)
				w.mu.Lock()
				w.n++
				if w.err == nil {
					w.err, w.at = err, r
				}
				w.mu.Unlock()
			} else {
				s.produced.Add(1)
				from.Ack()
			}
			if w.left.Add(-1) == 0 {
				close(w.done)
			}
		})
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		// The producer still runs the promises: what is stored is
		// acknowledged; the rest is read again next time.
		return ctx.Err()
	}
	if w.err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kafkax: %d of %d records not stored, e.g. one to topic %q: %w", w.n, len(batch), w.at.Topic, w.err)
	}
	return nil
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
	HeaderAttempts  = "kafkax-attempts"  // how many times it was processed
)

// DeadLetterOut returns the dead-letter record of m for topic: m's key,
// value and headers, plus the headers [HeaderError], [HeaderTopic],
// [HeaderPartition], [HeaderOffset] and [HeaderAttempts], with From set to
// m so that producing it settles m. Use it to send a stream of failed
// records to a dead-letter topic with [Produce]; [DeadLetter] does the same
// for records that [Msg.Fail] gave up on.
func DeadLetterOut(m Msg, topic string, cause error) Out {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	var h []kgo.RecordHeader
	if m.r != nil {
		h = make([]kgo.RecordHeader, 0, len(m.r.Headers)+5)
		h = append(h, m.r.Headers...)
		h = append(h,
			kgo.RecordHeader{Key: HeaderError, Value: []byte(msg)},
			kgo.RecordHeader{Key: HeaderTopic, Value: []byte(m.r.Topic)},
			kgo.RecordHeader{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(m.r.Partition), 10)},
			kgo.RecordHeader{Key: HeaderOffset, Value: strconv.AppendInt(nil, m.r.Offset, 10)},
			kgo.RecordHeader{Key: HeaderAttempts, Value: strconv.AppendInt(nil, int64(m.attempt)+1, 10)},
		)
		return Out{Topic: topic, Key: m.r.Key, Value: m.r.Value, Headers: h, From: m}
	}
	return Out{Topic: topic, From: m}
}
