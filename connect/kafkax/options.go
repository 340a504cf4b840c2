package kafkax

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SourceOption configures a [Source]; pass options to [NewSource].
type SourceOption interface{ applySource(*sourceConfig) }

// SinkOption configures a [Sink]; pass options to [NewSink].
type SinkOption interface{ applySink(*sinkConfig) }

type sourceOptionFunc func(*sourceConfig)

func (f sourceOptionFunc) applySource(c *sourceConfig) { f(c) }

type sinkOptionFunc func(*sinkConfig)

func (f sinkOptionFunc) applySink(c *sinkConfig) { f(c) }

type sourceConfig struct {
	maxInFlight    int           // records emitted and not settled before fetching pauses
	commitInterval time.Duration // commit the settled prefixes this often
	commitCount    int           // … or once this many records were settled since the last commit
	attempts       int           // Msg.Fail re-emits a record until it has failed this often
	retryDelay     time.Duration // pause before a failed record is emitted again
	deadLetter     *Sink         // where a record that failed every attempt goes; nil: the run fails
	deadTopic      string
	stopIdle       time.Duration // stop once idle this long with everything committed; 0: never
	pollWait       time.Duration // longest a poll waits before the source checks its state
	startTimeout   time.Duration
	kopts          []kgo.Opt
}

type sinkConfig struct {
	topic        string // default topic of an Out without one
	batch        int
	batchWait    time.Duration
	workers      int
	deliveryTime time.Duration
	startTimeout time.Duration
	kopts        []kgo.Opt
}

// Defaults of a [Source] and a [Sink].
const (
	DefaultMaxInFlight    = 10000
	DefaultCommitInterval = 500 * time.Millisecond
	DefaultCommitCount    = 5000
	DefaultAttempts       = 3
	DefaultRetryDelay     = 100 * time.Millisecond
	DefaultStartTimeout   = 10 * time.Second
	DefaultProduceBatch   = 1000
	DefaultBatchWait      = 2 * time.Millisecond
	DefaultSinkWorkers    = 4
	DefaultDeliveryTime   = time.Minute
)

func sourceOptions(opts []SourceOption) sourceConfig {
	c := sourceConfig{
		maxInFlight:    DefaultMaxInFlight,
		commitInterval: DefaultCommitInterval,
		commitCount:    DefaultCommitCount,
		attempts:       DefaultAttempts,
		retryDelay:     DefaultRetryDelay,
		pollWait:       250 * time.Millisecond,
		startTimeout:   DefaultStartTimeout,
	}
	for _, o := range opts {
		if o == nil {
			panic("kafkax: nil SourceOption")
		}
		o.applySource(&c)
	}
	return c
}

func sinkOptions(opts []SinkOption) sinkConfig {
	c := sinkConfig{
		batch:        DefaultProduceBatch,
		batchWait:    DefaultBatchWait,
		workers:      DefaultSinkWorkers,
		deliveryTime: DefaultDeliveryTime,
		startTimeout: DefaultStartTimeout,
	}
	for _, o := range opts {
		if o == nil {
			panic("kafkax: nil SinkOption")
		}
		o.applySink(&c)
	}
	return c
}

// MaxInFlight bounds the records the source has emitted and that are not
// settled yet (default [DefaultMaxInFlight]). When the bound is reached the
// source pauses fetching (franz-go's PauseFetchTopics) and emits nothing
// until half of them are settled, then resumes: a slow pipeline makes the
// backlog wait in Kafka, not in memory. Panics if n < 1.
func MaxInFlight(n int) SourceOption {
	if n < 1 {
		panic(fmt.Sprintf("kafkax: MaxInFlight must be ≥ 1, got %d", n))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxInFlight = n })
}

// CommitEvery sets how often the source commits the settled prefix of each
// partition: every interval, and sooner once count records were settled
// since the last commit (defaults [DefaultCommitInterval] and
// [DefaultCommitCount]). A commit is one round trip to the group
// coordinator for every partition together. Panics if interval < 10ms or
// count < 1.
func CommitEvery(interval time.Duration, count int) SourceOption {
	if interval < 10*time.Millisecond || count < 1 {
		panic(fmt.Sprintf("kafkax: CommitEvery needs interval ≥ 10ms and count ≥ 1, got %v, %d", interval, count))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.commitInterval, c.commitCount = interval, count })
}

// Attempts sets how many times a record is processed before [Msg.Fail]
// gives up on it (default [DefaultAttempts]): a failed record is emitted
// again after delay, and after its last attempt it goes to the dead-letter
// topic ([DeadLetter]), or, without one, the source fails the pipeline.
// Panics if n < 1 or delay < 0.
func Attempts(n int, delay time.Duration) SourceOption {
	if n < 1 || delay < 0 {
		panic(fmt.Sprintf("kafkax: Attempts needs n ≥ 1 and delay ≥ 0, got %d, %v", n, delay))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.attempts, c.retryDelay = n, delay })
}

// DeadLetter makes a record that failed every attempt go to topic through
// sink, built by [DeadLetterOut] (the error and the record's source topic,
// partition and offset in headers); it is settled once the broker has
// stored it there. If that produce fails the source fails the pipeline and
// the record is not committed. Panics if sink is nil or topic empty.
func DeadLetter(sink *Sink, topic string) SourceOption {
	if sink == nil || topic == "" {
		panic("kafkax: DeadLetter needs a Sink and a topic")
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.deadLetter, c.deadTopic = sink, topic })
}

// StopWhenIdle makes the source stop, and its stream close, once it has
// fetched nothing for d while every record it emitted is settled and
// committed, and the broker confirms that the group (every member
// together) has committed every partition of the topics up to its end. Without it the source reads until the pipeline stops. Panics
// if d < 10ms.
func StopWhenIdle(d time.Duration) SourceOption {
	if d < 10*time.Millisecond {
		panic(fmt.Sprintf("kafkax: StopWhenIdle must be ≥ 10ms, got %v", d))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.stopIdle = d })
}

// ToTopic sets the topic of every [Out] whose Topic is empty, and makes
// [NewSink] check that it exists.
func ToTopic(topic string) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.topic = topic })
}

// ProduceBatch sets how [Produce] groups records: up to n per batch,
// leaving when full or wait after its first record (defaults
// [DefaultProduceBatch] and [DefaultBatchWait]). Panics if n < 1 or
// wait < 0.
func ProduceBatch(n int, wait time.Duration) SinkOption {
	if n < 1 || wait < 0 {
		panic(fmt.Sprintf("kafkax: ProduceBatch needs n ≥ 1 and wait ≥ 0, got %d, %v", n, wait))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.batch, c.batchWait = n, wait })
}

// SinkWorkers sets how many batches are in flight at once (default
// [DefaultSinkWorkers]). Panics if n < 1.
func SinkWorkers(n int) SinkOption {
	if n < 1 {
		panic(fmt.Sprintf("kafkax: SinkWorkers must be ≥ 1, got %d", n))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.workers = n })
}

// DeliveryTimeout bounds how long the producer keeps retrying a record the
// broker has not acknowledged (default [DefaultDeliveryTime]); then the
// sink fails the pipeline. Panics if d < 1s.
func DeliveryTimeout(d time.Duration) SinkOption {
	if d < time.Second {
		panic(fmt.Sprintf("kafkax: DeliveryTimeout must be ≥ 1s, got %v", d))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.deliveryTime = d })
}

// ClientOption passes franz-go options to the client a [Source] or [Sink]
// creates, after the connector's own (so they override them): TLS, SASL,
// timeouts, fetch sizes. Options that would break the connector's contract
// — auto-commit, a transactional or non-idempotent producer — are the
// caller's responsibility.
type ClientOption struct{ opts []kgo.Opt }

// WithClient returns a [ClientOption] carrying opts.
func WithClient(opts ...kgo.Opt) ClientOption { return ClientOption{opts} }

func (o ClientOption) applySource(c *sourceConfig) { c.kopts = append(c.kopts, o.opts...) }
func (o ClientOption) applySink(c *sinkConfig)     { c.kopts = append(c.kopts, o.opts...) }
