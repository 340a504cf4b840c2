// Package kafkax connects sluice pipelines to Apache Kafka through franz-go:
// a [Source] that reads topics as a member of a consumer group, and a
// [Sink] that produces batches with the idempotent producer.
package kafkax
