// Package onkafka is the market-event pipeline of package market on Kafka
// and ClickHouse (StartKafka), with the per-second bars by event time,
// and what its runs need around it: topics, tables, a producer of events.
// `sluice demo --kafka` and `sluice serve` run it, and the benchmark lab
// measures it. Like market, its API follows the command's needs.
package onkafka
