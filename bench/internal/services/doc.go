// Package services starts what the lab's programs and their tests run
// against: Go programs built into a temporary directory (seed 002's, the
// lab's own commands), a Kafka broker and a ClickHouse server
// (scripts/services), and child processes whose output a test reads line
// by line; its package brokers, an embedded NATS server and a Kafka topic
// read back. Each start has its stop; nothing outlives the process that
// started it.
package services
