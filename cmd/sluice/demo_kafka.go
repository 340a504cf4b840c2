package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

// demoPartitions is how many partitions the Kafka demo's topics have.
const demoPartitions = 4

// demoKafka runs `sluice demo --kafka … --clickhouse …`: it deletes and
// creates again the topics, group and table of --name, produces --events
// events to the input topic, then runs the pipeline until every one is
// settled, counts the table's rows back and prints the summary.
func demoKafka(ctx context.Context, in *interrupts, f demoFlags, stdout io.Writer) error {
	drain := in.Draining()
	names := onkafka.NamesFor(f.name)
	fmt.Fprintf(stdout, "Kafka at %s, ClickHouse at %s: topics %s → %s (dead letters %s), group %s, table %s, all reset first\n",
		f.kafka, f.clickhouse, names.In, names.Out, names.Dead, names.Group, names.Table)
	db, err := clickhousex.Open(ctx, f.clickhouse)
	if err != nil {
		return err
	}
	defer db.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.kafka, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := onkafka.ResetTopics(ctx, adm, demoPartitions, names.Group, names.In, names.Out, names.Dead); err != nil {
		return err
	}
	if err := onkafka.CreateTable(ctx, db, names.Table, true); err != nil {
		return err
	}

	gctx, stop := context.WithCancel(ctx)
	defer context.AfterFunc(drain, stop)()
	n, err := onkafka.Produce(gctx, f.kafka, names.In, 0, f.Events, f.Malformed)
	stop()
	if drain.Err() != nil {
		fmt.Fprintf(stdout, "interrupted (%v) while producing: %d events in %s; the pipeline did not run\n", context.Cause(drain), n, names.In)
		return nil
	}
	if err != nil {
		return fmt.Errorf("producing the events: %w", err)
	}
	fmt.Fprintf(stdout, "produced %d events to %s; the pipeline starts\n", n, names.In)

	cfg := onkafka.KafkaConfig{Brokers: f.kafka, Names: names, Decoders: f.Decoders, Lookup: f.Lookup, MaxInFlight: 5000,
		Observe: f.ob.Observing()}
	res, err := runKafka(ctx, drain, db, cfg, n, f.ob.Show, stdout)
	if err != nil {
		return err
	}
	res.print(stdout, names, "sluice demo")
	rows, err := clickhousex.Count(ctx, db, names.Table)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nClickHouse: %d rows in %s, counted back after the run", rows, names.Table)
	if res.drained == nil && rows != res.stored {
		fmt.Fprintln(stdout)
		return fmt.Errorf("ClickHouse holds %d rows in %s, but the pipeline stored %d", rows, names.Table, res.stored)
	}
	fmt.Fprintln(stdout, " (as many as the pipeline stored)")
	fmt.Fprintf(stdout, "next: run it as a service with `sluice serve --kafka %s --clickhouse %s --name %s`, several at once to share the partitions\n",
		f.kafka, f.clickhouse, f.name)
	return nil
}
