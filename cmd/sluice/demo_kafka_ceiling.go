package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

// runKafkaCeiling measures what the brokers themselves allow: the demo's
// generator fills a topic of its own with the same events, then one bare
// loop does what the demo's pipeline does to Kafka and ClickHouse, with
// the same batching and guarantees — poll up to 500 records, waiting at
// most 50 ms for the batch to fill; insert them into a table of the same
// columns in one transaction; produce one record per event to a
// downstream topic and wait for every acknowledgement; then commit the
// offsets — and nothing else (no decoding, no enrichment).
func runKafkaCeiling(ctx context.Context, adm *kadm.Client, db *sql.DB, f demoFlags) (ceilResult, error) {
	var res ceilResult
	names := namesFor(f.name + "-ceiling")
	if err := resetKafka(ctx, adm, f.partitions, names.group, names.in, names.out); err != nil {
		return res, err
	}
	if err := createTable(ctx, db, names.table, true); err != nil {
		return res, err
	}
	defer func() { // free the space
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = db.ExecContext(cctx, "DROP TABLE IF EXISTS "+names.table)
		_, _ = adm.DeleteTopics(cctx, names.in, names.out)
	}()
	n, err := generateKafka(ctx, f.kafka, names.in, f)
	if err != nil {
		return res, fmt.Errorf("generator: %w", err)
	}
	seeds := strings.Split(f.kafka, ",")
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(names.group),
		kgo.ConsumeTopics(names.in), kgo.DisableAutoCommit())
	if err != nil {
		return res, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(names.out),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		return res, err
	}
	defer prod.Close()
	w := clickhousex.NewWriter(db, names.table, kafkaColumns, func(r *kgo.Record) []any {
		return []any{uint64(r.Partition)<<40 | uint64(r.Offset), string(r.Key), int64(0), int64(0), r.Timestamp.UnixNano(),
			int64(0), "", "", "", int64(0)}
	})
	start := time.Now()
	batch := make([]*kgo.Record, 0, 500)
	outs := make([]*kgo.Record, 0, 500)
	for res.events < n {
		batch = batch[:0]
		deadline := time.Now().Add(50 * time.Millisecond)
		for len(batch) < 500 {
			wait := time.Until(deadline)
			if len(batch) == 0 {
				wait = 5 * time.Second // the first record of a batch starts its 50 ms
			}
			if wait <= 0 {
				break
			}
			pctx, cancel := context.WithTimeout(ctx, wait)
			fs := cons.PollRecords(pctx, 500-len(batch))
			cancel()
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if err := fatalFetchErr(fs); err != nil {
				return res, err
			}
			if len(batch) == 0 && fs.NumRecords() > 0 {
				deadline = time.Now().Add(50 * time.Millisecond)
			}
			fs.EachRecord(func(r *kgo.Record) { batch = append(batch, r) })
			if len(batch) == 0 && time.Since(start) > 60*time.Second {
				return res, fmt.Errorf("no records for 60s, %d of %d read", res.events, n)
			}
		}
		if err := w.Write(ctx, batch); err != nil {
			return res, err
		}
		outs = outs[:0]
		for _, r := range batch {
			outs = append(outs, &kgo.Record{Key: r.Key, Value: r.Value})
		}
		if err := prod.ProduceSync(ctx, outs...).FirstErr(); err != nil {
			return res, err
		}
		if err := cons.CommitRecords(ctx, batch...); err != nil {
			return res, err
		}
		res.events += int64(len(batch))
	}
	res.wall = time.Since(start)
	return res, nil
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

// machineCPU is the CPU time every process on this machine has used since
// boot (/proc/stat: user, nice, system, irq, softirq, steal), or 0 where
// it cannot be read.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fs := strings.Fields(line)
	if len(fs) < 9 || fs[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, _ := strconv.ParseInt(fs[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}
