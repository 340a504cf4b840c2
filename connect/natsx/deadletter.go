package natsx

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers that [DeadLetterOut] adds to a dead-letter message.
const (
	HeaderError      = "Natsx-Error"      // the cause's message
	HeaderStream     = "Natsx-Stream"     // the stream the message was read from
	HeaderConsumer   = "Natsx-Consumer"   // the durable consumer that delivered it
	HeaderStreamSeq  = "Natsx-Stream-Seq" // its stream sequence, in decimal
	HeaderDeliveries = "Natsx-Deliveries" // how many times it was delivered
)

// DeadLetterOut returns the dead-letter message of m for subject: m's
// data and headers, plus [HeaderError], [HeaderStream], [HeaderConsumer],
// [HeaderStreamSeq] and [HeaderDeliveries]; its ID is "dead:" + m.ID(), so
// dead-lettering a message twice stores it once, and From is m's receipt,
// so that storing it settles m. Use it to publish the items of a
// [sluice.DeadLetter] stream with [Publish]; [DeadLetterTo] does the same
// for the messages that fail on their last delivery.
func DeadLetterOut(m Msg, subject string, cause error) Out {
	if m.m == nil {
		return Out{Subject: subject}
	}
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	md, _ := m.m.Metadata()
	o := deadOut(m.m, md, subject, m.src.stream, m.src.durable, msg)
	o.From = m.Receipt
	return o
}

// deadOut is the dead-letter message of m (whose metadata md may be nil)
// read from stream through consumer, failed with msg.
func deadOut(m jetstream.Msg, md *jetstream.MsgMetadata, subject, stream, consumer, msg string) Out {
	var seq, delivered uint64
	if md != nil {
		seq, delivered = md.Sequence.Stream, md.NumDelivered
	}
	id := m.Headers().Get(jetstream.MsgIDHeader)
	if id == "" {
		id = stream + ":" + strconv.FormatUint(seq, 10)
	}
	return Out{
		Subject: subject,
		Data:    m.Data(),
		Header:  deadHeader(m.Headers(), msg, stream, consumer, seq, delivered),
		ID:      "dead:" + id,
	}
}

func deadHeader(orig nats.Header, msg, stream, consumer string, seq, delivered uint64) nats.Header {
	h := make(nats.Header, len(orig)+5)
	for k, v := range orig {
		if k != jetstream.MsgIDHeader {
			h[k] = v
		}
	}
	h.Set(HeaderError, msg)
	h.Set(HeaderStream, stream)
	h.Set(HeaderConsumer, consumer)
	h.Set(HeaderStreamSeq, strconv.FormatUint(seq, 10))
	h.Set(HeaderDeliveries, strconv.FormatUint(delivered, 10))
	return h
}

// parker is a source's dead-letter path: it publishes the messages that
// failed on their last delivery, and those the server gave up on, to the
// DeadLetterTo subject ("" for none).
type parker struct {
	js      jetstream.JetStream
	st      jetstream.Stream // the stream read, which holds the messages given up on
	subject string
	stream  string
	durable string
	n       *sourceCounts
	log     *sourceLog
}

// failed parks m (whose metadata is md), which failed with cause on its
// last delivery; it waits for the server to store it, at most 5s.
func (p *parker) failed(m jetstream.Msg, md *jetstream.MsgMetadata, cause error) error {
	o := deadOut(m, md, p.subject, p.stream, p.durable, cause.Error())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seq, delivered := md.Sequence.Stream, md.NumDelivered
	if err := p.publish(ctx, o); err != nil {
		p.n.settleErrs.Add(1)
		p.log.deadFailed(seq, err)
		return err
	}
	p.log.dead(seq, delivered, cause.Error())
	return nil
}

func (p *parker) publish(ctx context.Context, o Out) error {
	h := o.Header
	h.Set(jetstream.MsgIDHeader, o.ID)
	if _, err := p.js.PublishMsg(ctx, &nats.Msg{Subject: o.Subject, Data: o.Data, Header: h}); err != nil {
		return err
	}
	p.n.parked.Add(1)
	return nil
}

// gaveUp publishes the message at ev's stream sequence, fetched from the
// stream, to the dead-letter subject.
func (p *parker) gaveUp(ctx context.Context, ev gaveUpEvent) error {
	rm, err := p.st.GetMsg(ctx, ev.StreamSeq)
	if err != nil {
		return err
	}
	id := rm.Header.Get(jetstream.MsgIDHeader)
	if id == "" {
		id = p.stream + ":" + strconv.FormatUint(ev.StreamSeq, 10)
	}
	msg := fmt.Sprintf("the server stopped delivering it after %d deliveries (MaxDeliver)", ev.Deliveries)
	return p.publish(ctx, Out{
		Subject: p.subject,
		Data:    rm.Data,
		Header:  deadHeader(rm.Header, msg, p.stream, p.durable, ev.StreamSeq, ev.Deliveries),
		ID:      "dead:" + id,
	})
}
