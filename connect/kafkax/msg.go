package kafkax

import (
	"strconv"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Msg is one record delivered by a [Source], with the [sluice.Receipt]
// that settles it (embedded: Ack, Fail and Expect are the receipt's). It is
// a small value: carry it, or its receipt, along with what is derived from
// it; whoever stores that settles it — the core's sinks do, [Produce] for
// the [Out].From of every record the broker stored. Once every record
// before it in its partition is settled too, its offset is committed. A
// record settled with Fail is delivered again ([Redeliver]). The zero Msg
// is not a record; settling it does nothing.
type Msg struct {
	sluice.Receipt
	r        *kgo.Record
	delivery int32 // 1 on the first delivery, counting redeliveries after Fail
}

// Record returns the franz-go record. It and its slices must not be
// modified.
func (m Msg) Record() *kgo.Record { return m.r }

// Value returns the record's value. It must not be modified.
func (m Msg) Value() []byte { return m.r.Value }

// Key returns the record's key. It must not be modified.
func (m Msg) Key() []byte { return m.r.Key }

// Topic returns the topic the record was read from.
func (m Msg) Topic() string { return m.r.Topic }

// Partition returns the partition the record was read from.
func (m Msg) Partition() int32 { return m.r.Partition }

// Offset returns the record's offset in its partition.
func (m Msg) Offset() int64 { return m.r.Offset }

// Delivery returns 1 on the record's first delivery, 2 on the first
// redelivery after a Fail, and so on (see [Redeliver]).
func (m Msg) Delivery() int { return int(m.delivery) }

// IsZero reports whether m is the zero Msg.
func (m Msg) IsZero() bool { return m.r == nil }

// ID returns "<topic>/<partition>/<offset>": the same every time the record
// is delivered, so it identifies duplicates downstream.
func (m Msg) ID() string {
	if m.r == nil {
		return ""
	}
	return m.r.Topic + "/" + strconv.Itoa(int(m.r.Partition)) + "/" + strconv.FormatInt(m.r.Offset, 10)
}
