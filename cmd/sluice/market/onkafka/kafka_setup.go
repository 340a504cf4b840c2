package onkafka

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Names are the topics, consumer group and ClickHouse table of the Kafka
// pipeline called name (see NamesFor).
type Names struct {
	In, Out, Dead, Group, Table string
}

// NamesFor returns the names of the pipeline called name: topics
// NAME-market (input), NAME-enriched (output) and NAME-dead (dead
// letters), group NAME and table NAME_events (with - as _). name must
// pass CheckName.
func NamesFor(name string) Names {
	return Names{In: name + "-market", Out: name + "-enriched", Dead: name + "-dead",
		Group: name, Table: strings.ReplaceAll(name, "-", "_") + "_events"}
}

// validName is what a pipeline's name may be: its topics (NAME-enriched,
// at most 249 characters), group and table (NAME_events, with - as _,
// unquoted in SQL) all take it.
var validName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

const maxNameLen = 249 - len("-enriched")

// CheckName returns an error if name cannot name a pipeline's topics,
// group and table.
func CheckName(name string) error {
	if !validName.MatchString(name) || len(name) > maxNameLen {
		return fmt.Errorf("--name must start with a letter and hold only ASCII letters, digits, - and _ (at most %d), got %q", maxNameLen, name)
	}
	return nil
}

// tableTimeout bounds making a table, dropping it first: a DROP waits
// for the merges running on the table, which on a loaded machine can
// take tens of seconds after a run of millions of rows.
const tableTimeout = 2 * time.Minute

// tableDDL is the columns and engine of the pipeline's table.
const tableDDL = `(id UInt64, symbol String, price4 Int64, size Int64, ts Int64, notional Int64,
	name String, sector String, currency String, lots Int64) ENGINE = MergeTree ORDER BY id`

// CreateTable creates table with tableDDL if it does not exist, dropping
// it first if fresh.
func CreateTable(ctx context.Context, db *sql.DB, table string, fresh bool) error {
	ctx, cancel := context.WithTimeout(ctx, tableTimeout)
	defer cancel()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			return fmt.Errorf("dropping table %s: %w", table, err)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" "+tableDDL); err != nil {
		return fmt.Errorf("creating table %s: %w", table, err)
	}
	return nil
}

// ResetTopics deletes group and topics, then creates the topics again,
// empty, with partitions partitions each.
func ResetTopics(ctx context.Context, adm *kadm.Client, partitions int, group string, topics ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A fresh broker has no group coordinator until its offsets topic
	// exists: retry while it says so.
	for {
		r, err := adm.DeleteGroups(ctx, group)
		if err == nil {
			err = r[group].Err
		}
		if err == nil || errors.Is(err, kerr.GroupIDNotFound) {
			break
		}
		if errors.Is(err, kerr.NonEmptyGroup) {
			return fmt.Errorf("deleting group %s (is another run using the name %s?): %w", group, group, err)
		}
		if !market.SleepCtx(ctx, 200*time.Millisecond) {
			return fmt.Errorf("deleting group %s: %w", group, err)
		}
	}
	if _, err := adm.DeleteTopics(ctx, topics...); err != nil {
		return fmt.Errorf("deleting topics: %w", err)
	}
	left := topics
	for len(left) > 0 {
		r, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, left...)
		if err != nil {
			return fmt.Errorf("creating topics: %w", err)
		}
		left = nil
		for _, t := range r.Sorted() {
			switch {
			case t.Err == nil:
			case errors.Is(t.Err, kerr.TopicAlreadyExists): // still being deleted
				left = append(left, t.Topic)
			default:
				return fmt.Errorf("creating topic %s: %w", t.Topic, t.Err)
			}
		}
		if len(left) > 0 && !market.SleepCtx(ctx, 100*time.Millisecond) {
			return fmt.Errorf("creating topics %v: %w", left, ctx.Err())
		}
	}
	return awaitLeaders(ctx, adm, partitions, topics)
}

// awaitLeaders waits until the brokers' metadata lists partitions
// partitions of each of topics, each with a leader: a topic created again
// right after its deletion is not served at once, and a client that
// reads it meanwhile fails with UNKNOWN_TOPIC_OR_PARTITION.
func awaitLeaders(ctx context.Context, adm *kadm.Client, partitions int, topics []string) error {
	for {
		m, err := adm.Metadata(ctx, topics...)
		if err == nil {
			err = leaderless(m, partitions, topics)
		}
		if err == nil {
			return nil
		}
		if !market.SleepCtx(ctx, 100*time.Millisecond) {
			return fmt.Errorf("waiting for the topics' leaders: %w", err)
		}
	}
}

// leaderless returns an error naming a topic of m that lacks partitions
// or a partition's leader, or nil.
func leaderless(m kadm.Metadata, partitions int, topics []string) error {
	for _, t := range topics {
		d, ok := m.Topics[t]
		switch {
		case !ok || d.Err != nil:
			return fmt.Errorf("topic %s: not listed (%v)", t, d.Err)
		case len(d.Partitions) != partitions:
			return fmt.Errorf("topic %s: %d partitions listed of %d", t, len(d.Partitions), partitions)
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("topic %s partition %d: no leader (%v)", t, p.Partition, p.Err)
			}
		}
	}
	return nil
}

// EnsureTopics creates those of topics that do not exist yet, with
// partitions partitions; it deletes nothing.
func EnsureTopics(ctx context.Context, adm *kadm.Client, partitions int, topics ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	for _, t := range r.Sorted() {
		if t.Err != nil && !errors.Is(t.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", t.Topic, t.Err)
		}
	}
	return nil
}

// Produce produces n market events, numbered from first, to topic, keyed
// by symbol (EventKey), as fast as the brokers take them, and returns how
// many they acknowledged. Their event times are their produce times as
// DefaultEventTimes lags them.
func Produce(ctx context.Context, brokers, topic string, first, n int, malformed float64) (int64, error) {
	return ProduceEvents(ctx, Producing{Brokers: brokers, Topic: topic, First: first, N: n, Malformed: malformed,
		Times: market.DefaultEventTimes()})
}

// Producing is what ProduceEvents produces.
type Producing struct {
	Brokers, Topic string
	First, N       int     // event ids First to First+N-1
	Malformed      float64 // the fraction of malformed events
	Times          market.EventTimes
	// Clock, if not nil, is when event id is produced (unix
	// nanoseconds), in place of the wall clock: with it every event —
	// its time too — follows from the id and the seeds, and a test
	// recomputes what was produced with Generated.
	Clock func(id int) int64
	// KeyByID keys each record by its event's id instead of its symbol:
	// an input whose partitions do not follow the symbol.
	KeyByID bool
}

// Generated returns the line of event id as ProduceEvents produces it,
// given its produce time (pr.Clock's, when set). Events are drawn in
// order from one generator: rng must be pr.NewGenerator()'s, called for
// ids First, First+1, … in turn.
func (pr Producing) Generated(buf []byte, rng *rand.Rand, id int, produced int64) []byte {
	return market.Generate(buf, rng, id, pr.Times.At(uint64(id), produced), pr.Malformed)
}

// NewGenerator returns the generator whose draws make pr's events.
func (pr Producing) NewGenerator() *rand.Rand { return rand.New(rand.NewPCG(4, uint64(pr.First)+4)) }

// ProduceEvents produces the events pr describes, keyed by symbol
// (EventKey), as fast as the brokers take them, and returns how many they
// acknowledged.
func ProduceEvents(ctx context.Context, pr Producing) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(pr.Brokers, ",")...), kgo.DefaultProduceTopic(pr.Topic),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(20000))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var stored atomic.Int64
	var mu sync.Mutex
	var firstErr error
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		stored.Add(1)
	}
	rng := pr.NewGenerator()
	var buf []byte
	ts := time.Now().UnixNano()
	for i := range pr.N {
		id := pr.First + i
		if i%1000 == 0 {
			if ctx.Err() != nil {
				break
			}
			ts = time.Now().UnixNano()
		}
		at := ts
		if pr.Clock != nil {
			at = pr.Clock(id)
		}
		buf = pr.Generated(buf[:0], rng, id, at)
		v := append([]byte(nil), buf...)
		key := market.EventKey(v)
		if pr.KeyByID {
			key = strconv.AppendInt(nil, int64(id), 10)
		}
		cl.Produce(ctx, &kgo.Record{Key: key, Value: v}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return stored.Load(), err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return stored.Load(), fmt.Errorf("%d of %d events not stored: %w", int64(pr.N)-stored.Load(), pr.N, firstErr)
	}
	return stored.Load(), nil
}

// epoch is what the rows' receive times count from (monotonic).
var epoch = time.Now()
