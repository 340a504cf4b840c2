package natsx

import (
	"context"
	"encoding/json"
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

// maxDeliveriesAdvisory is the subject prefix of the server's advisories
// about messages it stopped delivering; <stream>.<consumer> follows.
const maxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."

// DeadLetterOut returns the dead-letter message of m for subject: m's
// data and headers, plus [HeaderError], [HeaderStream], [HeaderConsumer],
// [HeaderStreamSeq] and [HeaderDeliveries]; its ID is "dead:" + m.ID(), so
// dead-lettering a message twice stores it once, and From is m, so that
// publishing it acknowledges m. Use it to send a stream of failed messages
// to a dead-letter subject with [Publish]; [DeadLetter] does the same for
// the messages [Msg.Fail] gives up on.
func DeadLetterOut(m Msg, subject string, cause error) Out {
	if m.m == nil {
		return Out{Subject: subject}
	}
	var seq, delivered uint64
	if md, err := m.m.Metadata(); err == nil {
		seq, delivered = md.Sequence.Stream, md.NumDelivered
	}
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	return Out{
		Subject: subject,
		Data:    m.m.Data(),
		Header:  deadHeader(m.m.Headers(), msg, m.src.stream, m.src.durable, seq, delivered),
		ID:      "dead:" + m.ID(),
		From:    m,
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

// deadLetter publishes m to the dead-letter subject and terminates it; if
// the publish fails it naks m and returns the error.
func (m Msg) deadLetter(cause error) error {
	s := m.src
	// A message already settled must not be dead-lettered: InProgress
	// fails for it (jetstream.ErrMsgAlreadyAckd), and otherwise restarts
	// its AckWait, so that it is not delivered again while it is being
	// published.
	if err := m.m.InProgress(); err != nil {
		return fmt.Errorf("natsx: dead-lettering %s: %w", m.ID(), err)
	}
	o := DeadLetterOut(m, s.cfg.deadSubject, cause)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.publishDead(ctx, o); err != nil {
		_ = m.Nak(s.cfg.nakDelay)
		return fmt.Errorf("natsx: dead-lettering %s to %q: %w", m.ID(), s.cfg.deadSubject, err)
	}
	return m.Term("dead-lettered to " + s.cfg.deadSubject)
}

func (s *Source) publishDead(ctx context.Context, o Out) error {
	h := o.Header
	h.Set(jetstream.MsgIDHeader, o.ID)
	if _, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: o.Subject, Data: o.Data, Header: h}); err != nil {
		return err
	}
	s.deadLet.Add(1)
	return nil
}

// gaveUpEvent is the part of a max-deliveries advisory the source reads.
type gaveUpEvent struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// onGaveUp runs on the advisory subscription's goroutine (nats.go's): it
// queues the advisory for the reading goroutine.
func (s *Source) onGaveUp(msg *nats.Msg) {
	var ev gaveUpEvent
	if err := json.Unmarshal(msg.Data, &ev); err != nil || ev.StreamSeq == 0 {
		return
	}
	s.gaveUp.Add(1)
	s.gaveUpMu.Lock()
	s.gaveUpEv = append(s.gaveUpEv, ev)
	s.gaveUpMu.Unlock()
	select {
	case s.gaveUpCh <- struct{}{}:
	default:
	}
}

// handleGaveUp dead-letters the messages the server gave up on, fetched
// from the stream by sequence; without a dead-letter subject it returns an
// error naming them, so that the loss is not silent.
func (s *Source) handleGaveUp(ctx context.Context) error {
	s.gaveUpMu.Lock()
	evs := s.gaveUpEv
	s.gaveUpEv = nil
	s.gaveUpMu.Unlock()
	for _, ev := range evs {
		if s.cfg.deadSubject == "" {
			return fmt.Errorf("natsx: source %s/%s: the server stopped delivering the message at stream sequence %d after %d deliveries (MaxDeliver) and it was never settled; set DeadLetter to keep such messages",
				s.stream, s.durable, ev.StreamSeq, ev.Deliveries)
		}
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.deadLetterSeq(gctx, ev)
		cancel()
		if err != nil {
			return fmt.Errorf("natsx: source %s/%s: dead-lettering the message at stream sequence %d that the server stopped delivering: %w",
				s.stream, s.durable, ev.StreamSeq, err)
		}
	}
	return nil
}

func (s *Source) deadLetterSeq(ctx context.Context, ev gaveUpEvent) error {
	rm, err := s.st.GetMsg(ctx, ev.StreamSeq)
	if err != nil {
		return err
	}
	id := rm.Header.Get(jetstream.MsgIDHeader)
	if id == "" {
		id = s.stream + ":" + strconv.FormatUint(ev.StreamSeq, 10)
	}
	msg := fmt.Sprintf("the server stopped delivering it after %d deliveries (MaxDeliver)", ev.Deliveries)
	return s.publishDead(ctx, Out{
		Subject: s.cfg.deadSubject,
		Data:    rm.Data,
		Header:  deadHeader(rm.Header, msg, s.stream, s.durable, ev.StreamSeq, ev.Deliveries),
		ID:      "dead:" + id,
	})
}
