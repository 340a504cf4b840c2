package kafkax

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produce hands the n records of parts to the producer and waits for
// their outcomes. It returns an error only when ctx ended first (the
// producer still runs the promises); the records it did not store are in
// the result.
func (s *Sink) produce(ctx context.Context, parts [][]Out, n int) (*produced, error) {
	if n == 0 {
		return &produced{}, nil
	}
	if s.tx != nil {
		// The source's End waits for no write to be handing records
		// to the producer.
		s.tx.gate.RLock()
		defer s.tx.gate.RUnlock()
		if !s.tx.wrote.Load() {
			s.tx.wrote.Store(true)
		}
	}
	// The records come from a pool: the producer keeps them only until
	// their promises have run.
	krs := getRecords(n)
	w := &produced{left: int64(n), done: make(chan struct{}), krs: krs}
	promise := w.promise // one promise for the call, not one per record
	i := 0
	for _, recs := range parts {
		for j := range recs {
			s.fill(&krs[i], &recs[j])
			s.cl.Produce(ctx, &krs[i], promise)
			i++
		}
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	slices.SortFunc(w.bad, func(a, b failure) int { return a.i - b.i })
	putRecords(krs)
	w.krs = nil
	s.produced.Add(int64(n - w.n))
	if w.n > 0 {
		s.failed.Add(int64(w.n))
		s.logFailed.add(int64(w.n), w.err)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return w, nil
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

// produced collects the outcomes of one call's records.
type produced struct {
	left  int64 // promises still to run
	done  chan struct{}
	krs   []kgo.Record // the call's records, for the index of a failed one
	mu    sync.Mutex
	n     int       // records not stored
	bad   []failure // one per record not stored, by index once all have run
	err   error     // the first error
	topic string    // and its record's topic
}

// failure is a record not stored: its index in the call, and why.
type failure struct {
	i   int
	err error
}

func (w *produced) promise(r *kgo.Record, err error) {
	w.mu.Lock()
	if err != nil {
		if w.n++; w.err == nil {
			w.err, w.topic = err, r.Topic
		}
		i := int((uintptr(unsafe.Pointer(r)) - uintptr(unsafe.Pointer(&w.krs[0]))) / unsafe.Sizeof(w.krs[0]))
		w.bad = append(w.bad, failure{i, fmt.Errorf("kafkax: record to topic %q not stored: %w", r.Topic, err)})
	}
	w.left--
	last := w.left == 0
	w.mu.Unlock()
	if last {
		close(w.done)
	}
}

// whole is the error of a call none of whose records was stored.
func (w *produced) whole() error {
	return fmt.Errorf("kafkax: none of %d records stored, e.g. one to topic %q: %w", w.n, w.topic, w.err)
}

func (s *Sink) fill(rec *kgo.Record, o *Out) {
	rec.Topic, rec.Key, rec.Value, rec.Headers = o.Topic, o.Key, o.Value, s.inject(o)
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
			s.logFailed.add(1, err)
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
