// Command loadtest is the lab's load generator and meter for the market
// pipeline that `sluice demo` and `sluice serve` run (the package
// github.com/sluicehq/sluice/cmd/sluice/market): throughput, latency and
// CPU per event over a backlog, a sustained rate judged held or not, a
// sweep for the highest sustainable rate with an HTML report, and
// comparisons with bare hand-written loops on the same brokers.
//
//	go run ./bench/cmd/loadtest nats [--compare] [--storage memory] …
//	go run ./bench/cmd/loadtest kafka --kafka BROKERS --clickhouse ADDR [--compare] [--bars=false]
//	go run ./bench/cmd/loadtest kafka … --rate R --duration D [--warmup W]
//	go run ./bench/cmd/loadtest kafka … --sweep FROM:TO:STEP [--report FILE] [--compare]
//	go run ./bench/cmd/loadtest gen --kafka BROKERS --topic TOPIC --rate R --duration D
//
// scripts/services start runs a Kafka broker and a ClickHouse server and
// prints their addresses.
package main

import "github.com/sluicehq/sluice/bench/internal/cli"

// loadtest is the program: its commands, through the lab's dispatcher.
var loadtest = cli.Program{Name: "loadtest", Commands: []cli.Command{
	{Name: "nats", Summary: "the pipeline on NATS JetStream (embedded server): events/s, latency, CPU per event; --compare: the broker's ceiling", Run: runNATS},
	{Name: "kafka", Summary: "the pipeline on Kafka and ClickHouse: a backlog, a sustained --rate, or a --sweep for the highest sustainable rate; --exactly-once: the delivery modes side by side", Run: runKafka},
	{Name: "gen", Summary: "market events to a Kafka topic at --rate for --duration, each stamped with its produce time", Run: runGen},
}}

func main() { loadtest.Main() }
