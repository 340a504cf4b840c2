package main

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// runKafkaCeiling measures what the brokers themselves allow: the demo's
// generator fills a topic of its own with the same events, then the bare
// loop (bareLoop) consumes them all.
func runKafkaCeiling(ctx context.Context, adm *kadm.Client, db *sql.DB, f kafkaFlags) (ceilResult, error) {
	var res ceilResult
	names := onkafka.NamesFor(f.name + "-ceiling")
	drop, err := freshBare(ctx, adm, db, f.partitions, names)
	if err != nil {
		return res, err
	}
	defer drop()
	n, err := onkafka.Produce(ctx, f.kafka, names.In, 0, f.events, f.malformed)
	if err != nil {
		return res, fmt.Errorf("generator: %w", err)
	}
	l, err := openBareLoop(f.kafka, names, db)
	if err != nil {
		return res, err
	}
	defer l.close()
	start := time.Now()
	for res.events < n {
		if err := l.poll(ctx, 5*time.Second); err != nil {
			return res, err
		}
		if len(l.batch) == 0 {
			if time.Since(start) > 60*time.Second {
				return res, fmt.Errorf("no records for 60s, %d of %d read", res.events, n)
			}
			continue
		}
		if err := l.insert(ctx); err != nil {
			return res, err
		}
		if err := l.forward(ctx); err != nil {
			return res, err
		}
		res.events += int64(len(l.batch))
	}
	res.wall = time.Since(start)
	return res, nil
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
