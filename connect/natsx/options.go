package natsx

import (
	"fmt"
	"time"
)

// SourceOption configures a [Source]; pass options to [NewSource].
type SourceOption interface{ applySource(*sourceConfig) }

type sourceOptionFunc func(*sourceConfig)

func (f sourceOptionFunc) applySource(c *sourceConfig) { f(c) }

type sourceConfig struct {
	batch         int           // messages asked for per fetch
	idleCheck     time.Duration // how often an idle source checks for the end and for outages
	maxAckPending int           // consumer's MaxAckPending
	ackWait       time.Duration // consumer's AckWait
	maxDeliver    int           // consumer's MaxDeliver; -1 unlimited
	filter        string        // consumer's FilterSubject
	bind          bool          // use the consumer as it is; never create or update it
	failTerm      bool          // Msg.Fail terminates rather than naks
	deadSubject   string        // Msg.Fail's dead-letter subject; "" for none
	deadAfter     int           // … used from this delivery on
	nakDelay      time.Duration // Msg.Fail's redelivery delay when naking
	untilDrained  bool
	maxOutage     time.Duration // fail after this long without an answer from the server; 0: never
	startTimeout  time.Duration // bound on NewSource's requests when ctx has no deadline
}

// Defaults of a [Source].
const (
	DefaultFetchBatch    = 500
	DefaultIdleCheck     = 250 * time.Millisecond
	DefaultMaxAckPending = 10000
	DefaultAckWait       = 30 * time.Second
	DefaultNakDelay      = time.Second
	DefaultMaxOutage     = time.Minute
	DefaultStartTimeout  = 5 * time.Second
)

func sourceOptions(opts []SourceOption) sourceConfig {
	c := sourceConfig{
		batch:         DefaultFetchBatch,
		idleCheck:     DefaultIdleCheck,
		maxAckPending: DefaultMaxAckPending,
		ackWait:       DefaultAckWait,
		maxDeliver:    -1,
		nakDelay:      DefaultNakDelay,
		maxOutage:     DefaultMaxOutage,
		startTimeout:  DefaultStartTimeout,
	}
	for _, o := range opts {
		if o == nil {
			panic("natsx: nil SourceOption")
		}
		o.applySource(&c)
	}
	return c
}

// FetchBatch sets how many messages one pull request asks the server for
// (default [DefaultFetchBatch]); the source asks for more when half have
// arrived, so a batch is always on its way. Messages are handed to the
// pipeline as they arrive, not when the batch is complete. Panics if n < 1.
func FetchBatch(n int) SourceOption {
	if n < 1 {
		panic(fmt.Sprintf("natsx: FetchBatch must be ≥ 1, got %d", n))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.batch = n })
}

// IdleCheck sets how long the source waits with no message before it
// checks whether the consumer is drained ([UntilDrained]) and whether the
// server is still there ([MaxOutage]) (default [DefaultIdleCheck]). Panics
// if d < 10ms.
func IdleCheck(d time.Duration) SourceOption {
	if d < 10*time.Millisecond {
		panic(fmt.Sprintf("natsx: IdleCheck must be ≥ 10ms, got %v", d))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.idleCheck = d })
}

// MaxAckPending sets the consumer's limit on messages delivered but not yet
// acknowledged (default [DefaultMaxAckPending]), shared by every process
// reading the consumer. It bounds what is in flight: once the pipeline holds
// that many messages the server delivers no more until some are settled, so
// a slow pipeline slows delivery rather than growing memory. Panics if n < 1.
func MaxAckPending(n int) SourceOption {
	if n < 1 {
		panic(fmt.Sprintf("natsx: MaxAckPending must be ≥ 1, got %d", n))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxAckPending = n })
}

// AckWait sets how long the server waits for a delivered message to be
// settled before it delivers it again, to this process or another (default
// [DefaultAckWait]). It must be longer than the pipeline takes to commit a
// message, counting the time it waits in the pipeline's queues (up to
// [MaxAckPending] messages can be ahead of it): no "in progress" ack is
// sent for it meanwhile, so a message held longer is delivered again while
// its first copy is still on its way. Panics if d < 100ms.
func AckWait(d time.Duration) SourceOption {
	if d < 100*time.Millisecond {
		panic(fmt.Sprintf("natsx: AckWait must be ≥ 100ms, got %v", d))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.ackWait = d })
}

// MaxDeliver bounds how many times the server delivers one message (default
// unlimited). A message that reaches the limit without being acknowledged
// is no longer delivered and the server publishes an advisory. Panics if
// n < 1.
func MaxDeliver(n int) SourceOption {
	if n < 1 {
		panic(fmt.Sprintf("natsx: MaxDeliver must be ≥ 1, got %d", n))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxDeliver = n })
}

// FilterSubject makes the consumer deliver only the stream's messages whose
// subject matches subject.
func FilterSubject(subject string) SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.filter = subject })
}

// Bind makes [NewSource] use the durable consumer as it exists on the
// server, without creating or updating it; NewSource fails if it does not
// exist. The consumer must use explicit acknowledgement. Options that
// configure the consumer (MaxAckPending, AckWait, MaxDeliver,
// FilterSubject) are then ignored.
func Bind() SourceOption { return sourceOptionFunc(func(c *sourceConfig) { c.bind = true }) }

// NakOnFail makes [Msg.Fail] negatively acknowledge the message, asking the
// server to deliver it again after delay. This is the default, with
// [DefaultNakDelay]. Panics if delay < 0.
func NakOnFail(delay time.Duration) SourceOption {
	if delay < 0 {
		panic(fmt.Sprintf("natsx: NakOnFail delay must be ≥ 0, got %v", delay))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.failTerm, c.nakDelay = false, delay })
}

// TermOnFail makes [Msg.Fail] terminate the message: the server never
// delivers it again.
func TermOnFail() SourceOption { return sourceOptionFunc(func(c *sourceConfig) { c.failTerm = true }) }

// DeadLetter makes [Msg.Fail] publish a message that failed on its
// after-th delivery (or later) to subject — a subject of some stream — with
// the error, the stream, the consumer, the stream sequence and the
// delivery count in headers ([DeadLetterOut]), and then terminate it; on
// earlier deliveries Fail naks it as usual, so it is tried again. The run
// goes on: a failing message no longer needs to fail the pipeline, and its
// neighbours are not held back. A message the server itself gives up on
// (its [MaxDeliver] reached without a settlement, for instance because the
// process holding it died) goes to subject too, fetched from the stream by
// its sequence when the server's max-deliveries advisory arrives. With
// MaxDeliver, after must not exceed it. Panics if subject is empty or
// after < 1.
func DeadLetter(subject string, after int) SourceOption {
	if subject == "" || after < 1 {
		panic(fmt.Sprintf("natsx: DeadLetter needs a subject and after ≥ 1, got %q, %d", subject, after))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.deadSubject, c.deadAfter = subject, after })
}

// UntilDrained makes the source stop, and its stream close, once the
// consumer has nothing left to deliver and no message delivered to anyone
// is waiting to be settled. Without it the source reads until the pipeline
// stops. A message delivered to a process that died counts as unsettled
// until the server delivers it again after AckWait, so several processes
// sharing a consumer each stop only when all the work is done.
func UntilDrained() SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.untilDrained = true })
}

// MaxOutage makes the source fail once it has had no answer from the
// server for d (default [DefaultMaxOutage]); 0 means it waits for the
// connection to come back for as long as the connection keeps trying.
// Panics if d < 0.
func MaxOutage(d time.Duration) SourceOption {
	if d < 0 {
		panic(fmt.Sprintf("natsx: MaxOutage must be ≥ 0, got %v", d))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxOutage = d })
}

// SinkOption configures a [Sink]; pass options to [NewSink].
type SinkOption interface{ applySink(*sinkConfig) }

type sinkOptionFunc func(*sinkConfig)

func (f sinkOptionFunc) applySink(c *sinkConfig) { f(c) }

type sinkConfig struct {
	stream       string        // expected stream; "" for any
	batch        int           // Publish's batch size
	batchWait    time.Duration // Publish's batch wait
	workers      int           // batches published at once
	retries      int           // attempts after the first
	retryWait    time.Duration // first pause between attempts; doubles, capped at maxRetryWait
	ackTimeout   time.Duration // how long to wait for the server's acks of one attempt
	onCommit     func([]Out)
	startTimeout time.Duration
}

// Defaults of a [Sink].
const (
	DefaultPublishBatch = 500
	DefaultBatchWait    = 2 * time.Millisecond
	DefaultSinkWorkers  = 2
	DefaultRetries      = 8
	DefaultRetryWait    = 50 * time.Millisecond
	DefaultAckTimeout   = 5 * time.Second
	maxRetryWait        = 2 * time.Second
)

func sinkOptions(opts []SinkOption) sinkConfig {
	c := sinkConfig{
		batch:        DefaultPublishBatch,
		batchWait:    DefaultBatchWait,
		workers:      DefaultSinkWorkers,
		retries:      DefaultRetries,
		retryWait:    DefaultRetryWait,
		ackTimeout:   DefaultAckTimeout,
		startTimeout: DefaultStartTimeout,
	}
	for _, o := range opts {
		if o == nil {
			panic("natsx: nil SinkOption")
		}
		o.applySink(&c)
	}
	return c
}

// ToStream names the stream every message must be stored in. [NewSink]
// fails if it does not exist, and the server rejects a message whose
// subject belongs to another stream (or to none) at once rather than after
// the retries.
func ToStream(name string) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.stream = name })
}

// PublishBatch sets how [Publish] groups messages: up to n per batch,
// leaving when full or wait after its first message (defaults
// [DefaultPublishBatch] and [DefaultBatchWait]). Panics if n < 1 or
// wait < 0.
func PublishBatch(n int, wait time.Duration) SinkOption {
	if n < 1 || wait < 0 {
		panic(fmt.Sprintf("natsx: PublishBatch needs n ≥ 1 and wait ≥ 0, got %d, %v", n, wait))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.batch, c.batchWait = n, wait })
}

// SinkWorkers sets how many batches are published at once, each by its
// own goroutine (default [DefaultSinkWorkers]). With more than one, batches
// are stored in no particular order; with one, each batch after the one
// before it, and a batch in order unless some of its messages are sent
// again ([Retries]): those are stored after the others. Panics if n < 1.
func SinkWorkers(n int) SinkOption {
	if n < 1 {
		panic(fmt.Sprintf("natsx: SinkWorkers must be ≥ 1, got %d", n))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.workers = n })
}

// Retries sets how many times the messages of a batch that the server did
// not acknowledge are sent again (default [DefaultRetries]), with a pause
// of wait before the first retry, doubling up to 2s (default
// [DefaultRetryWait]). Once they run out the sink fails the pipeline. A
// message the server rejects (a 400 answer: its subject belongs to another
// stream than ToStream's, it is larger than the stream allows, …) or the
// client refuses (larger than the server's max payload) is not sent again:
// it fails the pipeline at once. Panics if n < 0 or wait < 0.
func Retries(n int, wait time.Duration) SinkOption {
	if n < 0 || wait < 0 {
		panic(fmt.Sprintf("natsx: Retries needs n ≥ 0 and wait ≥ 0, got %d, %v", n, wait))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.retries, c.retryWait = n, wait })
}

// AckTimeout bounds how long the sink waits for the server to acknowledge
// the messages of one attempt (default [DefaultAckTimeout]); those still
// unacknowledged then are retried. Panics if d ≤ 0.
func AckTimeout(d time.Duration) SinkOption {
	if d <= 0 {
		panic(fmt.Sprintf("natsx: AckTimeout must be > 0, got %v", d))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.ackTimeout = d })
}

// OnCommit registers f, called with each batch once the server has stored
// every message of it and their From messages have been acknowledged. It
// runs on the sink's goroutines, several at once when [SinkWorkers] > 1,
// and must not keep the slice.
func OnCommit(f func(batch []Out)) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.onCommit = f })
}
