package onkafka

import (
	"context"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// repartition re-keys the input through the topic cfg.Repartition: a
// record of the input is produced to the repartition topic keyed by its
// symbol (EventKey) — settled, like any sink's item, once the broker has
// it — and the records read back from that topic, by a second source in
// the same group, are what goes on. Every record of a symbol then lies in
// one partition of the topic the stages after read, so one member of the
// group holds all of a symbol's events and its windows see them all. (A
// second source, not one reading both topics: a window stage's watermark
// waits for every partition its source lists, and the input's partitions
// would never reach it.)
func (k *Kafka) repartition(p *sluice.Pipeline, cfg KafkaConfig, msgs sluice.Stream[kafkax.Msg]) sluice.Stream[kafkax.Msg] {
	rekeyed := sluice.Map(p, "rekey", msgs, 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return kafkax.Out{Topic: cfg.Repartition, Key: market.EventKey(m.Value()), Value: m.Value(), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "repartition", rekeyed, k.Sink)
	return kafkax.Read(p, "consume-repartitioned", k.Repartitioned)
}
