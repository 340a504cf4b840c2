package natsx

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// SourceOption configures a [Source]; pass options to [NewSource].
type SourceOption interface{ applySource(*sourceConfig) }

type sourceOptionFunc func(*sourceConfig)

func (f sourceOptionFunc) applySource(c *sourceConfig) { f(c) }

type sourceConfig struct {
	batch          int           // messages asked for per fetch
	idleCheck      time.Duration // how often an idle source checks for the end and for outages
	maxInFlight    int           // consumer's MaxAckPending
	ackWait        time.Duration // consumer's AckWait
	maxDeliver     int           // consumer's MaxDeliver; -1 unlimited
	redeliverDelay time.Duration // nak delay of a failed message
	filter         string        // consumer's FilterSubject
	bind           bool          // use the consumer as it is; never create or update it
	deadSubject    string        // where a message failed on its last delivery goes; "" for none
	caughtUp       bool          // stop once nothing is left to deliver or settle
	maxOutage      time.Duration // fail after this long without an answer from the server; 0: never
	startTimeout   time.Duration // bound on NewSource's requests when ctx has no deadline
	sluice.Observe               // Propagate, Logger
}

// Defaults of a [Source].
const (
	DefaultFetchBatch     = 500
	DefaultIdleCheck      = 250 * time.Millisecond
	DefaultMaxInFlight    = 10000
	DefaultAckWait        = 30 * time.Second
	DefaultRedeliverDelay = time.Second
	DefaultMaxOutage      = time.Minute
	DefaultStartTimeout   = 5 * time.Second
)

func sourceOptions(opts []SourceOption) sourceConfig {
	c := sourceConfig{
		batch:          DefaultFetchBatch,
		idleCheck:      DefaultIdleCheck,
		maxInFlight:    DefaultMaxInFlight,
		ackWait:        DefaultAckWait,
		maxDeliver:     -1,
		redeliverDelay: DefaultRedeliverDelay,
		maxOutage:      DefaultMaxOutage,
		startTimeout:   DefaultStartTimeout,
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
// checks whether it has caught up ([StopWhenCaughtUp]) and whether the
// server is still there ([MaxOutage]) (default [DefaultIdleCheck]).
// Panics if d < 10ms.
func IdleCheck(d time.Duration) SourceOption {
	if d < 10*time.Millisecond {
		panic(fmt.Sprintf("natsx: IdleCheck must be ≥ 10ms, got %v", d))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.idleCheck = d })
}

// MaxInFlight bounds the messages delivered but not yet settled (default
// [DefaultMaxInFlight]): it is the consumer's MaxAckPending, shared by
// every process reading the consumer. Once the pipelines hold that many
// messages the server delivers no more until some are settled, so a slow
// pipeline slows delivery rather than growing memory. Panics if n < 1.
func MaxInFlight(n int) SourceOption {
	if n < 1 {
		panic(fmt.Sprintf("natsx: MaxInFlight must be ≥ 1, got %d", n))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxInFlight = n })
}

// AckWait sets how long the server waits for a delivered message to be
// settled before it delivers it again, to this process or another (default
// [DefaultAckWait]). It must be longer than the pipeline takes to store a
// message, counting the time it waits in the pipeline's queues (up to
// [MaxInFlight] messages can be ahead of it): no "in progress" ack is
// sent for it meanwhile, so a message held longer is delivered again while
// its first copy is still on its way. Panics if d < 100ms.
func AckWait(d time.Duration) SourceOption {
	if d < 100*time.Millisecond {
		panic(fmt.Sprintf("natsx: AckWait must be ≥ 100ms, got %v", d))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.ackWait = d })
}

// Redeliver sets what becomes of a message settled with a cause
// ([sluice.Receipt.Fail], or a stage's policy): it is negatively
// acknowledged with delay, and the server delivers it again after delay,
// until it has been delivered max times in all (the consumer's
// MaxDeliver). On its last delivery a failed message goes to the
// [DeadLetterTo] subject; without one it is naked all the same, the server
// gives up on it, and a run fails naming it (see [Read]). The default is
// no bound on deliveries and a delay of [DefaultRedeliverDelay]; with
// [Bind], max is the consumer's own MaxDeliver and only delay applies.
// Panics if max < 1 or delay < 0.
func Redeliver(max int, delay time.Duration) SourceOption {
	if max < 1 || delay < 0 {
		panic(fmt.Sprintf("natsx: Redeliver needs max ≥ 1 and delay ≥ 0, got %d, %v", max, delay))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxDeliver, c.redeliverDelay = max, delay })
}

// FilterSubject makes the consumer deliver only the stream's messages whose
// subject matches subject.
func FilterSubject(subject string) SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.filter = subject })
}

// Bind makes [NewSource] use the durable consumer as it exists on the
// server, without creating or updating it; NewSource fails if it does not
// exist. The consumer must use explicit acknowledgement. Options that
// configure the consumer (MaxInFlight, AckWait, Redeliver's max,
// FilterSubject) are then ignored. If the consumer bounds deliveries, the
// stream and consumer that keep the server's max-deliveries advisories
// are still created if missing (see [NewSource]).
func Bind() SourceOption { return sourceOptionFunc(func(c *sourceConfig) { c.bind = true }) }

// DeadLetterTo parks the broker's dead letters on subject, counted as
// [SourceStats].Parked (not to be confused with the pipeline's own dead
// letters, [sluice.DeadLetter]): it makes a message that failed on its last delivery (see
// [Redeliver], which must bound the deliveries) be published to subject —
// a subject of some stream — with the cause, the stream, the consumer,
// the stream sequence and the delivery count in headers
// ([DeadLetterOut]), and then terminated: the run goes on, and the
// message's neighbours are not held back. A message the server itself
// gives up on (delivered max times without a settlement, for instance
// because the process holding it died) goes to subject too, fetched from
// the stream by its sequence when a Read takes the server's
// max-deliveries advisory about it, which the source keeps in a stream
// (see [NewSource]): the Read running then, or the next one. Panics if
// subject is empty.
func DeadLetterTo(subject string) SourceOption {
	if subject == "" {
		panic("natsx: DeadLetterTo: empty subject")
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.deadSubject = subject })
}

// StopWhenCaughtUp makes the source stop, and its stream close, once the
// consumer has nothing left to deliver, no message delivered to anyone
// is waiting to be settled, and no advisory about a message the server
// gave up on is waiting to be resolved (dead-lettered, or reported by a
// failed run; see [Read]). Without it the source reads until the
// pipeline stops. A message delivered to a process that died counts as
// unsettled until the server delivers it again after AckWait, so several
// processes sharing a consumer each stop only when all the work is done.
//
// The server stores an advisory shortly after it stops counting the
// message as pending, so with a bound on deliveries the source stops only
// when two idle checks at least 200ms apart, with nothing delivered in
// between, find it caught up: a run ends that much after its last
// message. An advisory stored later still is resolved by the next Read.
func StopWhenCaughtUp() SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.caughtUp = true })
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
	stream         string        // expected stream; "" for any
	workers        int           // writes at once
	ackTimeout     time.Duration // how long a write waits for the server's acks
	startTimeout   time.Duration
	sluice.Observe // Propagate, Logger
}

// Defaults of a [Sink].
const (
	DefaultSinkWorkers = 2
	DefaultAckTimeout  = 5 * time.Second
	// DefaultGather is the most messages one write of a Publish or
	// PublishBatches stage takes (the core's sluice.Gather).
	DefaultGather = sluice.DefaultChunk
)

func sinkOptions(opts []SinkOption) sinkConfig {
	c := sinkConfig{
		workers:      DefaultSinkWorkers,
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
// subject belongs to another stream (or to none) at once, an error marked
// [sluice.Permanent], rather than leaving it unanswered.
func ToStream(name string) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.stream = name })
}

// SinkWorkers sets how many goroutines of a [Publish] or [PublishBatches]
// stage write at once (default [DefaultSinkWorkers]). With more than one,
// chunks are stored in no particular order; with one, each after the one
// before it. Panics if n < 1.
func SinkWorkers(n int) SinkOption {
	if n < 1 {
		panic(fmt.Sprintf("natsx: SinkWorkers must be ≥ 1, got %d", n))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.workers = n })
}

// AckTimeout bounds how long [Sink.Write] waits for the server to
// acknowledge its messages (default [DefaultAckTimeout]); it returns an
// error for those still unacknowledged then. Panics if d ≤ 0.
func AckTimeout(d time.Duration) SinkOption {
	if d <= 0 {
		panic(fmt.Sprintf("natsx: AckTimeout must be > 0, got %v", d))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.ackTimeout = d })
}

// Option configures a [Source] and a [Sink] alike: pass it to [NewSource]
// or [NewSink]. [Propagate] and [Logger] are Options; they set the core's
// [sluice.Observe], which every connector's options set.
type Option func(*sluice.Observe)

func (f Option) applySource(c *sourceConfig) { f(&c.Observe) }
func (f Option) applySink(c *sinkConfig)     { f(&c.Observe) }
