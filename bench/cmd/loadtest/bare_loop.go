package main

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

// bareLoop is the hand-written loop that --compare measures the pipeline
// against: it does what the pipeline does to Kafka and ClickHouse, with
// the same batching and guarantees — poll up to bareBatch records, waiting
// at most bareFill for the batch to fill; insert them into a table of the
// same columns in one transaction; produce one record per event to a
// downstream topic and wait for every acknowledgement; then commit the
// offsets — and nothing else (no decoding, no enrichment). The backlog
// mode's ceiling (kafka_ceiling.go) and the sweep's bare steps
// (sweep_compare.go) both run it.
type bareLoop struct {
	cons, prod *kgo.Client
	w          *clickhousex.Writer[*kgo.Record]
	batch      []*kgo.Record
	polled     []time.Time // when each record of batch was polled
	outs       []*kgo.Record
}

const (
	bareBatch = 500
	bareFill  = 50 * time.Millisecond
)

// bareColumns are the demo table's columns as the bare loop fills them
// from the records it consumed (no decoding: the id, the key and the
// record's time), each appended to the insert's block typed, as the
// pipeline's store does.
var bareColumns = []clickhousex.Column[*kgo.Record]{
	clickhousex.UInt64Column("id", func(r **kgo.Record) uint64 { return uint64((*r).Partition)<<40 | uint64((*r).Offset) }),
	clickhousex.StringColumn("symbol", func(r **kgo.Record) string { return string((*r).Key) }),
	clickhousex.Int64Column("price4", bareZero),
	clickhousex.Int64Column("size", bareZero),
	clickhousex.Int64Column("ts", func(r **kgo.Record) int64 { return (*r).Timestamp.UnixNano() }),
	clickhousex.Int64Column("notional", bareZero),
	clickhousex.StringColumn("name", bareEmpty),
	clickhousex.StringColumn("sector", bareEmpty),
	clickhousex.StringColumn("currency", bareEmpty),
	clickhousex.Int64Column("lots", bareZero),
}

// bareZero and bareEmpty fill the columns the bare loop leaves empty (it
// decodes nothing).
func bareZero(**kgo.Record) int64   { return 0 }
func bareEmpty(**kgo.Record) string { return "" }

// openBareLoop connects a bare loop to the topics and table of names.
func openBareLoop(brokers string, names onkafka.Names, db *sql.DB) (*bareLoop, error) {
	seeds := strings.Split(brokers, ",")
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(names.Group),
		kgo.ConsumeTopics(names.In), kgo.DisableAutoCommit())
	if err != nil {
		return nil, err
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(names.Out),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		cons.Close()
		return nil, err
	}
	w := clickhousex.NewColumnWriter(db, names.Table, bareColumns)
	return &bareLoop{cons: cons, prod: prod, w: w,
		batch: make([]*kgo.Record, 0, bareBatch), polled: make([]time.Time, 0, bareBatch), outs: make([]*kgo.Record, 0, bareBatch)}, nil
}

func (l *bareLoop) close() {
	l.prod.Close()
	l.cons.Close()
}

// poll fills l.batch: up to bareBatch records, waiting at most bareFill
// from the first; it waits at most idle for the first and leaves the
// batch empty if none came. It returns ctx's error once ctx ends.
func (l *bareLoop) poll(ctx context.Context, idle time.Duration) error {
	l.batch, l.polled = l.batch[:0], l.polled[:0]
	deadline := time.Now().Add(idle)
	for len(l.batch) < bareBatch {
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fs := l.cons.PollRecords(pctx, bareBatch-len(l.batch))
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fatalFetchErr(fs); err != nil {
			return err
		}
		now := time.Now()
		if len(l.batch) == 0 {
			if fs.NumRecords() == 0 {
				return nil
			}
			deadline = now.Add(bareFill) // the first record starts the batch's wait
		}
		fs.EachRecord(func(r *kgo.Record) { l.batch, l.polled = append(l.batch, r), append(l.polled, now) })
	}
	return nil
}

// insert writes l.batch into ClickHouse in one insert.
func (l *bareLoop) insert(ctx context.Context) error { return l.w.Write(ctx, l.batch) }

// forward produces l.batch downstream, waits for every acknowledgement,
// then commits its offsets.
func (l *bareLoop) forward(ctx context.Context) error {
	l.outs = l.outs[:0]
	for _, r := range l.batch {
		l.outs = append(l.outs, &kgo.Record{Key: r.Key, Value: r.Value})
	}
	if err := l.prod.ProduceSync(ctx, l.outs...).FirstErr(); err != nil {
		return err
	}
	return l.cons.CommitRecords(ctx, l.batch...)
}

// fatalFetchErr returns the first error of fs other than a poll that
// ended by its deadline.
func fatalFetchErr(fs kgo.Fetches) error {
	for _, e := range fs.Errors() {
		if e.Err == context.DeadlineExceeded || e.Err == context.Canceled {
			continue
		}
		return fmt.Errorf("fetching %s/%d: %w", e.Topic, e.Partition, e.Err)
	}
	return nil
}

// freshBare resets the topics, group and table of names for a bare loop,
// and returns the function that deletes them again (to free the space).
func freshBare(ctx context.Context, adm *kadm.Client, db *sql.DB, partitions int, names onkafka.Names) (drop func(), err error) {
	if err := onkafka.ResetTopics(ctx, adm, partitions, names.Group, names.In, names.Out); err != nil {
		return nil, err
	}
	if err := onkafka.CreateTable(ctx, db, names.Table, true); err != nil {
		return nil, err
	}
	return func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = db.ExecContext(cctx, "DROP TABLE IF EXISTS "+names.Table)
		_, _ = adm.DeleteTopics(cctx, names.In, names.Out)
	}, nil
}
