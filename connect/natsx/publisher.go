package natsx

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errSinkClosed fails the publishes still waiting when their sink closes.
var errSinkClosed = errors.New("natsx: the sink was closed before the server answered")

// publisher sends messages to JetStream without waiting and matches the
// server's acknowledgements to them. It does the work of nats.go's
// asynchronous publisher, whose reconnect goroutine (v1.55.0) can block
// forever when the publisher is cleaned up just after its first publish;
// here the one goroutine, watching the connection, is started with its
// channel and ends when close removes it.
//
// A write's messages are registered together, as one [waiting], and each
// message's reply subject is the publisher's inbox prefix, the write's
// number and the message's index: a message costs no lock and no channel
// of its own as it is sent.
type publisher struct {
	nc     *nats.Conn
	log    *logger // nil without a Logger
	prefix string  // reply subjects: prefix + "<write>.<index>"
	sub    *nats.Subscription
	status chan nats.Status
	done   chan struct{} // the status goroutine has returned

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*waiting // by write number
	closed  bool
}

// waiting is one write's messages until each has its answer: nil once
// the server stored it (or recognised a duplicate), the server's
// [jetstream.APIError] if it rejected it, [jetstream.ErrNoStreamResponse]
// if no stream holds its subject, the client's error if it could not be
// sent, [nats.ErrDisconnected] if the connection was lost before the
// answer came (the answer is lost with it), [nats.ErrConnectionClosed]
// once the connection is closed, and [errSinkClosed] once the sink is.
// done is closed once every message has one. A message whose answer never
// comes is the caller's to time out ([Sink.Write] does, after
// [AckTimeout]): [publisher.finish] ends the wait.
type waiting struct {
	id   uint64
	done chan struct{}

	mu   sync.Mutex
	errs []error
	got  []bool // the message has its answer
	left int    // messages without one
	over bool   // finished: later answers are ignored
}

// answer records err as message i's answer, unless it has one already or
// the wait is over.
func (w *waiting) answer(i int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over || i < 0 || i >= len(w.got) || w.got[i] {
		return
	}
	w.got[i], w.errs[i] = true, err
	if w.left--; w.left == 0 {
		close(w.done)
	}
}

// answerRest gives every message without an answer err.
func (w *waiting) answerRest(err error) {
	for i := range w.got {
		w.answer(i, err)
	}
}

func newPublisher(nc *nats.Conn, log *logger) (*publisher, error) {
	p := &publisher{nc: nc, log: log, prefix: nc.NewInbox() + ".", pending: make(map[uint64]*waiting), done: make(chan struct{})}
	sub, err := nc.Subscribe(p.prefix+"*.*", p.deliver)
	if err != nil {
		return nil, err
	}
	// Acknowledgements are small and many may arrive at once; the
	// connection must not drop them as a slow consumer's.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	p.sub = sub
	statuses := []nats.Status{nats.RECONNECTING, nats.CLOSED}
	if log != nil {
		statuses = append(statuses, nats.CONNECTED) // an outage's end, to log
	}
	p.status = nc.StatusChanged(statuses...)
	go p.watch(p.status)
	return p, nil
}

// watch fails every message waiting for an answer when the connection is
// lost (the server's answers are lost with it) or closed, and logs the
// outages. It returns when the connection is closed or close removes ch.
func (p *publisher) watch(ch chan nats.Status) {
	defer close(p.done)
	o := p.log.outage()
	for s := range ch {
		switch s {
		case nats.CLOSED:
			p.log.log(slog.LevelInfo, "connection closed")
			p.failAll(nats.ErrConnectionClosed)
			return
		case nats.CONNECTED:
			o.up()
		default:
			o.down(errConnLost)
			p.failAll(nats.ErrDisconnected)
		}
	}
}

// publish sends msgs, with their reply subjects set, and returns the wait
// for their answers; a message that could not be sent has the client's
// error as its answer. Once the sink is closed every message has
// [errSinkClosed]. The caller ends the wait with finish.
func (p *publisher) publish(msgs []nats.Msg) *waiting {
	w := &waiting{done: make(chan struct{}), errs: make([]error, len(msgs)), got: make([]bool, len(msgs)), left: len(msgs)}
	if len(msgs) == 0 {
		close(w.done)
		return w
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.answerRest(errSinkClosed)
		return w
	}
	w.id = p.next
	p.next++
	p.pending[w.id] = w
	p.mu.Unlock()
	base := p.prefix + strconv.FormatUint(w.id, 10) + "."
	for i := range msgs {
		msgs[i].Reply = base + strconv.Itoa(i)
		if err := p.nc.PublishMsg(&msgs[i]); err != nil {
			w.answer(i, err)
		}
	}
	return w
}

// finish ends w's wait: answers that come later are ignored. It returns
// each message's answer, and whether it had one.
func (p *publisher) finish(w *waiting) (errs []error, got []bool) {
	p.mu.Lock()
	delete(p.pending, w.id)
	p.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.over = true
	return w.errs, w.got
}

// pubAck is the part of the server's answer to a publish that the
// publisher reads.
type pubAck struct {
	Error  *jetstream.APIError `json:"error"`
	Stream string              `json:"stream"`
}

// deliver records the server's answer m for the message it answers.
func (p *publisher) deliver(m *nats.Msg) {
	write, index, ok := strings.Cut(m.Subject[len(p.prefix):], ".")
	id, err := strconv.ParseUint(write, 10, 64)
	i, err2 := strconv.Atoi(index)
	if !ok || err != nil || err2 != nil {
		return // not an answer to this publisher
	}
	p.mu.Lock()
	w := p.pending[id]
	p.mu.Unlock()
	if w != nil { // nil: finished, or failed by a reconnect
		w.answer(i, ackError(m))
	}
}

// ackError is the error that the server's answer m gives, nil for a
// message stored.
func ackError(m *nats.Msg) error {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return jetstream.ErrNoStreamResponse
	}
	var a pubAck
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return fmt.Errorf("%w: %v", jetstream.ErrInvalidJSAck, err)
	}
	if a.Error != nil {
		return a.Error
	}
	if a.Stream == "" {
		return jetstream.ErrInvalidJSAck
	}
	return nil
}

// failAll answers every message waiting with err.
func (p *publisher) failAll(err error) {
	p.mu.Lock()
	pending := p.pending
	p.pending = make(map[uint64]*waiting)
	p.mu.Unlock()
	for _, w := range pending {
		w.answerRest(err)
	}
}

// close ends the subscription and the status goroutine, and fails the
// messages still waiting. Publishes after it fail at once. It is safe to
// call more than once.
func (p *publisher) close() {
	p.mu.Lock()
	was := p.closed
	p.closed = true
	p.mu.Unlock()
	if was {
		<-p.done
		return
	}
	_ = p.sub.Unsubscribe()
	p.nc.RemoveStatusListener(p.status)
	<-p.done
	p.failAll(errSinkClosed)
}
