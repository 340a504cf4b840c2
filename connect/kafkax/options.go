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
	maxInFlight    int           // records tracked and not settled before fetching pauses
	commitInterval time.Duration // the source commits what is owed this often
	deliveries     int           // a record is delivered at most this often
	redeliverDelay time.Duration // pause before a failed record is delivered again
	deadLetter     *Sink         // where a record whose last delivery failed goes; nil: the run fails
	deadTopic      string
	stopCaughtUp   bool
	uncommitted    bool          // ReadUncommitted
	txnID          string        // Transactional: the member's transactional ID; "" for none
	txnEvery       time.Duration // Transactional: the epoch length
	deadOwn        bool          // DeadLetterTopic: the source produces dead letters itself
	startTimeout   time.Duration
	kopts          []kgo.Opt
	observe        // Propagate, Logger
}

type sinkConfig struct {
	topic        string // default topic of an Out without one
	workers      int
	deliveryTime time.Duration
	startTimeout time.Duration
	kopts        []kgo.Opt
	observe      // Propagate, Logger
}

// Defaults of a [Source] and a [Sink].
const (
	DefaultMaxInFlight     = 10000
	DefaultCommitInterval  = 500 * time.Millisecond
	DefaultDeliveries      = 3
	DefaultRedeliverDelay  = 100 * time.Millisecond
	DefaultStartTimeout    = 10 * time.Second
	DefaultSinkWorkers     = 4
	DefaultGather          = 4096 // records one Write of a Produce or ProduceBatches stage takes at most (sluice.Gather)
	DefaultDeliveryTime    = time.Minute
	DefaultBufferedRecords = 10000 // records a Sink's producer holds before Write waits for room
)

func sourceOptions(opts []SourceOption) sourceConfig {
	c := sourceConfig{
		maxInFlight:    DefaultMaxInFlight,
		commitInterval: DefaultCommitInterval,
		deliveries:     DefaultDeliveries,
		redeliverDelay: DefaultRedeliverDelay,
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

// MaxInFlight bounds the records the source has fetched and that are not
// settled yet (default [DefaultMaxInFlight]). When the bound is reached the
// source pauses fetching (franz-go's PauseFetchTopics) and emits nothing
// until half of them are settled, or their partitions moved, then resumes:
// a slow pipeline makes the backlog wait in Kafka, not in memory. Panics
// if n < 1.
func MaxInFlight(n int) SourceOption {
	if n < 1 {
		panic(fmt.Sprintf("kafkax: MaxInFlight must be ≥ 1, got %d", n))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.maxInFlight = n })
}

// CommitEvery sets how often the source commits the settled prefix of
// each partition, with the offsets settled past it in the commit's
// metadata (default [DefaultCommitInterval]): one round trip to the group
// coordinator for every partition that owes one, together, while the
// client is open — during a drain too. Panics if interval < 100ms.
func CommitEvery(interval time.Duration) SourceOption {
	if interval < 100*time.Millisecond {
		panic(fmt.Sprintf("kafkax: CommitEvery needs an interval ≥ 100ms, got %v", interval))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.commitInterval = interval })
}

// Redeliver sets what becomes of a record settled with a failure
// ([sluice.Receipt.Fail]): the source emits it again after delay, until it
// has been delivered max times in all (default [DefaultDeliveries] and
// [DefaultRedeliverDelay]; Kafka itself delivers nothing twice). After its
// last delivery fails it goes to the dead-letter topic ([DeadLetterTo]),
// or, without one, the source fails the pipeline naming the record. Its
// neighbours go on meanwhile: only the commit of its partition waits for
// it. Panics if max < 1 or delay < 0.
func Redeliver(max int, delay time.Duration) SourceOption {
	if max < 1 || delay < 0 {
		panic(fmt.Sprintf("kafkax: Redeliver needs max ≥ 1 and delay ≥ 0, got %d, %v", max, delay))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.deliveries, c.redeliverDelay = max, delay })
}

// DeadLetterTo makes a record whose last delivery failed go to topic
// through sink, built by [DeadLetterOut] (the error and the record's source
// topic, partition and offset in headers); it is settled, and committed,
// once the broker has stored it there. If that produce fails the source
// fails the pipeline and the record is not committed. Panics if sink is
// nil or topic empty.
func DeadLetterTo(sink *Sink, topic string) SourceOption {
	if sink == nil || topic == "" {
		panic("kafkax: DeadLetterTo needs a Sink and a topic")
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.deadLetter, c.deadTopic, c.deadOwn = sink, topic, false })
}

// DeadLetterTopic makes a [Transactional] source produce a record whose
// last delivery failed to topic itself, built by [DeadLetterOut], in the
// transaction of the epoch that commits its offset: a read-committed
// consumer of topic sees it exactly once. [NewSource] returns an error
// when the source is not Transactional (use [DeadLetterTo]). Panics if
// topic is empty.
func DeadLetterTopic(topic string) SourceOption {
	if topic == "" {
		panic("kafkax: DeadLetterTopic needs a topic")
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.deadLetter, c.deadTopic, c.deadOwn = nil, topic, true })
}

// StopWhenCaughtUp makes the source stop, and its stream close, once a
// poll finds nothing new, every record it emitted is settled and
// committed, and the broker confirms that the group (every member
// together) has committed every partition of the topics up to its end
// (a transaction's commit marker included). A poll waits 10 ms for new
// records after one that found some, doubling to 250 ms while none come,
// so the end of a backlog is seen tens of milliseconds after its last
// record settles, not a quarter second. Without it the source reads until
// the pipeline drains or stops.
func StopWhenCaughtUp() SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.stopCaughtUp = true })
}

// ReadUncommitted makes the source read every record a producer stored,
// those of transactions still open or later aborted included. By default a
// source reads committed records only: a record of a transaction appears
// once its transaction commits, and never if it aborts, and the end of a
// partition ([StopWhenCaughtUp]) is its last stable offset, before the first
// record of a transaction still open. Reading uncommitted sees records
// sooner on a topic with long transactions, and delivers aborted ones.
func ReadUncommitted() SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.uncommitted = true })
}

// ToTopic sets the topic of every [Out] whose Topic is empty, and makes
// [NewSink] check that it exists.
func ToTopic(topic string) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.topic = topic })
}

// SinkWorkers sets how many goroutines of a [Produce] or [ProduceBatches]
// stage write at once, each with one call of [Sink.Write] in flight
// (default [DefaultSinkWorkers]). A write waits for the broker's
// acknowledgements, so several in flight keep the producer busy; while
// they wait, the records that arrive gather for the next write (see
// [Produce]). Panics if n < 1.
func SinkWorkers(n int) SinkOption {
	if n < 1 {
		panic(fmt.Sprintf("kafkax: SinkWorkers must be ≥ 1, got %d", n))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.workers = n })
}

// DeliveryTimeout bounds how long the producer keeps retrying a record the
// broker has not acknowledged (default [DefaultDeliveryTime]); then
// [Sink.Write] returns an error. Panics if d < 1s.
func DeliveryTimeout(d time.Duration) SinkOption {
	if d < time.Second {
		panic(fmt.Sprintf("kafkax: DeliveryTimeout must be ≥ 1s, got %v", d))
	}
	return sinkOptionFunc(func(c *sinkConfig) { c.deliveryTime = d })
}

// ClientOption passes franz-go options to the client a [Source] or [Sink]
// creates, after the connector's own (so they override them): TLS, SASL,
// timeouts, fetch sizes. Options that would break the connector's contract
// — autocommitting, a transactional or non-idempotent producer, other
// group callbacks (OnOffsetsFetched among them) — are the caller's
// responsibility.
type ClientOption struct{ opts []kgo.Opt }

// WithClient returns a [ClientOption] carrying opts.
func WithClient(opts ...kgo.Opt) ClientOption { return ClientOption{opts} }

func (o ClientOption) applySource(c *sourceConfig) { c.kopts = append(c.kopts, o.opts...) }
func (o ClientOption) applySink(c *sinkConfig)     { c.kopts = append(c.kopts, o.opts...) }
