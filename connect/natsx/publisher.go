package natsx

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errSinkClosed fails the publishes still waiting when their sink closes.
var errSinkClosed = errors.New("natsx: the sink was closed before the server answered")

// publisher sends messages to JetStream without waiting and matches the
// server's acknowledgements to them: each message's reply subject is the
// publisher's inbox prefix and a number of its own. It does the work of
// nats.go's asynchronous publisher, whose reconnect goroutine (v1.55.0)
// can block forever when the publisher is cleaned up just after its first
// publish; here the one goroutine, watching the connection, is started
// with its channel and ends when close removes it.
//
// The answer to one message is sent once on the channel publish returned:
// nil once the server stored it (or recognised a duplicate), the
// server's [jetstream.APIError] if it rejected it,
// [jetstream.ErrNoStreamResponse] if no stream holds its subject,
// [nats.ErrDisconnected] if the connection was lost before the answer came
// (the answer is lost with it), [nats.ErrConnectionClosed] once the
// connection is closed, and an error naming the sink once close is called.
// A message whose answer never comes is the caller's to time out
// ([Sink.Write] does, after [AckTimeout]) and forget.
type publisher struct {
	nc     *nats.Conn
	prefix string // reply subjects: prefix + the message's number
	sub    *nats.Subscription
	status chan nats.Status
	done   chan struct{} // the status goroutine has returned

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan error
	closed  bool
}

func newPublisher(nc *nats.Conn) (*publisher, error) {
	p := &publisher{nc: nc, prefix: nc.NewInbox() + ".", pending: make(map[uint64]chan error), done: make(chan struct{})}
	sub, err := nc.Subscribe(p.prefix+"*", p.deliver)
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
	p.status = nc.StatusChanged(nats.RECONNECTING, nats.CLOSED)
	go p.watch(p.status)
	return p, nil
}

// watch fails every message waiting for an answer when the connection is
// lost (the server's answers are lost with it) or closed. It returns when
// the connection is closed or close removes ch.
func (p *publisher) watch(ch chan nats.Status) {
	defer close(p.done)
	for s := range ch {
		if s == nats.CLOSED {
			p.failAll(nats.ErrConnectionClosed)
			return
		}
		p.failAll(nats.ErrDisconnected)
	}
}

// answer is where the answer to one published message will come: its
// number, and the channel the answer is sent on, once.
type answer struct {
	id uint64
	ch <-chan error
}

// publish sends m, with its reply subject set, and returns where its
// answer will come, or the error that kept it from being sent.
func (p *publisher) publish(m *nats.Msg) (answer, error) {
	ch := make(chan error, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return answer{}, errSinkClosed
	}
	id := p.next
	p.next++
	p.pending[id] = ch
	p.mu.Unlock()
	m.Reply = p.prefix + strconv.FormatUint(id, 10)
	if err := p.nc.PublishMsg(m); err != nil {
		p.forget(id)
		return answer{}, err
	}
	return answer{id, ch}, nil
}

// forget drops the message numbered id from those waiting: its answer,
// if it comes, is ignored.
func (p *publisher) forget(id uint64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// pubAck is the part of the server's answer to a publish that the
// publisher reads.
type pubAck struct {
	Error  *jetstream.APIError `json:"error"`
	Stream string              `json:"stream"`
}

// deliver sends the server's answer m to the message it answers.
func (p *publisher) deliver(m *nats.Msg) {
	id, err := strconv.ParseUint(m.Subject[len(p.prefix):], 10, 64)
	if err != nil {
		return // not an answer to this publisher
	}
	p.mu.Lock()
	ch, ok := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	if !ok {
		return // timed out and forgotten, or failed by a reconnect
	}
	ch <- ackError(m)
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
	p.pending = make(map[uint64]chan error)
	p.mu.Unlock()
	for _, ch := range pending {
		ch <- err
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
