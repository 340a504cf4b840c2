package natsx

import (
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"
)

// Msg is one message delivered by a [Source]. It embeds the
// [sluice.Receipt] that settles it: Ack once everything derived from it is
// stored, Fail(cause) to have it delivered again or dead-lettered (see
// [Redeliver] and [DeadLetterTo]), Expect(n) when n results each settle
// it. Carry the receipt along with what is derived from it ([Out].From,
// or by embedding it in a type of your own), and the pipeline's sinks
// settle it (see [sluice.Receipt] for which stages settle what). A Msg is
// a small value, safe to copy.
//
// The zero Msg is not a message: settling it does nothing, and its
// accessors return zero values.
type Msg struct {
	sluice.Receipt
	m    jetstream.Msg
	src  *Source
	recv int64 // nanotime when it was fetched
}

// Data returns the message's payload (nil for the zero Msg). It must not
// be modified.
func (m Msg) Data() []byte {
	if m.m == nil {
		return nil
	}
	return m.m.Data()
}

// Subject returns the subject the message was published to ("" for the
// zero Msg).
func (m Msg) Subject() string {
	if m.m == nil {
		return ""
	}
	return m.m.Subject()
}

// Header returns the message's headers (nil when it has none).
func (m Msg) Header() nats.Header {
	if m.m == nil {
		return nil
	}
	return m.m.Headers()
}

// IsZero reports whether m is the zero Msg.
func (m Msg) IsZero() bool { return m.m == nil }

// Received returns when the source fetched the message.
func (m Msg) Received() time.Time { return epoch.Add(time.Duration(m.recv)) }

// Metadata returns the message's stream sequence, delivery count
// (NumDelivered: 1 on the first delivery) and timestamps, parsed from its
// reply subject. The zero Msg has none: it returns an error.
func (m Msg) Metadata() (*jetstream.MsgMetadata, error) {
	if m.m == nil {
		return nil, errZeroMsg
	}
	return m.m.Metadata()
}

var errZeroMsg = errors.New("natsx: the zero Msg is not a message")

// ID returns a stable identity for the message: its Nats-Msg-Id header if
// it has one, else "<stream>:<stream sequence>". It is the same on every
// delivery of the message, so it makes a good Nats-Msg-Id for the one
// message derived from it ([Out].ID): a redelivered message then produces
// a duplicate that the server discards. The zero Msg's ID is "".
func (m Msg) ID() string {
	if m.m == nil {
		return ""
	}
	if h := m.m.Headers(); h != nil {
		if id := h.Get(jetstream.MsgIDHeader); id != "" {
			return id
		}
	}
	md, err := m.m.Metadata()
	if err != nil {
		return ""
	}
	return md.Stream + ":" + strconv.FormatUint(md.Sequence.Stream, 10)
}

// InProgress tells the server the message is still being worked on,
// restarting its AckWait. It settles nothing. It returns an error matching
// [jetstream.ErrMsgAlreadyAckd] once the message is settled.
func (m Msg) InProgress() error {
	if m.m == nil {
		return nil
	}
	return m.m.InProgress()
}

var epoch = time.Now()

// nanotime is monotonic time since epoch.
func nanotime() int64 { return int64(time.Since(epoch)) }
