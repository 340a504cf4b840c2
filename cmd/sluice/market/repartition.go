package market

import (
	"context"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// repartition re-keys the input through the topic cfg.Repartition: the
// source reads both the input topic and that one, in one group; a record
// of the input is produced to the repartition topic keyed by its symbol
// (EventKey) — settled, like any sink's item, once the broker has it —
// and only the records read back from the repartition topic go on. Every
// record of a symbol then lies in one partition of the topic the stages
// after read, so one member of the group holds all of a symbol's events
// and its windows see them all.
func (k *Kafka) repartition(p *sluice.Pipeline, cfg KafkaConfig, msgs sluice.Stream[kafkax.Msg]) sluice.Stream[kafkax.Msg] {
	both := sluice.Broadcast(p, "by-topic", msgs, 2)
	input := sluice.Filter(p, "input", both[0], 1, func(_ context.Context, m kafkax.Msg) (bool, error) {
		return m.Topic() != cfg.Repartition, nil
	})
	rekeyed := sluice.Map(p, "rekey", input, 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return kafkax.Out{Topic: cfg.Repartition, Key: EventKey(m.Value()), Value: m.Value(), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "repartition", rekeyed, k.Sink)
	return sluice.Filter(p, "repartitioned", both[1], 1, func(_ context.Context, m kafkax.Msg) (bool, error) {
		return m.Topic() == cfg.Repartition, nil
	})
}
