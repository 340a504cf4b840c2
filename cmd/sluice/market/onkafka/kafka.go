package onkafka

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// Row is an event on its way from the enrich stage to ClickHouse and the
// output topic; it carries the receipt of its record. It is kept small
// (its reference data behind a pointer): the stages from the batch to the
// fan-out's two copies each copy it.
type Row struct {
	msg  kafkax.Msg
	at   time.Duration // since epoch, when the decode stage received it
	tick market.Tick
	ref  *market.RefData // nil: its symbol has no reference data (dead-lettered)
}

// Received returns when the pipeline received the row's record from the
// source.
func (r *Row) Received() time.Time { return epoch.Add(r.at) }

// Tick returns the row's event.
func (r *Row) Tick() market.Tick { return r.tick }

// Origin returns the receipt of the record it came from.
func (r *Row) Origin() sluice.Receipt { return r.msg.Receipt }

// rowColumns are the table's columns (tableDDL) as the store writes them:
// each value appended to the insert's block typed, with no []any and no
// boxed value per row.
var rowColumns = []clickhousex.Column[Row]{
	clickhousex.UInt64Column("id", func(r *Row) uint64 { return r.tick.ID }),
	clickhousex.StringColumn("symbol", func(r *Row) string { return r.tick.Symbol }),
	clickhousex.Int64Column("price4", func(r *Row) int64 { return r.tick.Price4 }),
	clickhousex.Int64Column("size", func(r *Row) int64 { return r.tick.Size }),
	clickhousex.Int64Column("ts", func(r *Row) int64 { return r.tick.TS }),
	clickhousex.Int64Column("notional", func(r *Row) int64 { return r.tick.Notional }),
	clickhousex.StringColumn("name", func(r *Row) string { return r.ref.Name }),
	clickhousex.StringColumn("sector", func(r *Row) string { return r.ref.Sector }),
	clickhousex.StringColumn("currency", func(r *Row) string { return r.ref.Currency }),
	clickhousex.Int64Column("lots", func(r *Row) int64 { return (r.tick.Size + r.ref.Lot - 1) / r.ref.Lot }),
}

var errUnknownSymbol = errors.New("unknown symbol")

// The encode stage's slabs: encodeSlab bytes each, a new one once fewer
// than encodeRoom bytes (more than an encoded line) are left.
const (
	encodeSlab = 64 << 10
	encodeRoom = 512
)

// The source's fetches: see StartKafka.
const (
	fetchBytes = 256 << 10
	fetchWait  = 25 * time.Millisecond
)

// storeInserts is how many ClickHouse inserts the store stage runs at
// once; each takes every row waiting, up to clickhousex.DefaultGather.
const storeInserts = clickhousex.DefaultSinkWorkers

// KafkaConfig is how StartKafka runs the pipeline.
type KafkaConfig struct {
	Brokers     string        // host:port,…
	Names       Names         // its topics, group and table
	Decoders    int           // decode+validate workers
	Lookup      time.Duration // one reference lookup's round trip (one per batch)
	MaxInFlight int           // most records received and not yet settled

	// Member makes the source a long-lived member of its group: one that
	// dies gives its partitions up to the others after 6 s without a
	// heartbeat (the broker's minimum).
	Member bool
	// MemberID, if not empty, is the source's client ID: the member's
	// name in the group, as the group's description lists it.
	MemberID string
	// ExactlyOnce, if not zero, is the epoch of the transactional mode
	// (kafkax.Transactional): the records produced to Names.Out and
	// Names.Dead and the source's offsets for the inputs they came from
	// are committed in one Kafka transaction per epoch, so that a
	// read-committed consumer sees each input's outputs once. The
	// transactional ID is Names.Group-MemberID: give each member its own
	// MemberID, and the same after a restart, which fences what the
	// previous process left open at once (another ID leaves it to the
	// broker's transaction timeout, 40 s, during which read-committed
	// consumers of its partitions wait). ClickHouse stays at least once
	// (its rows are keyed by event id: a table that deduplicates makes
	// them once). Not with Bars or Repartition.
	ExactlyOnce time.Duration

	// OnStored, if not nil, is called with each batch of rows once its
	// insert has committed, at committed, before the rows are settled.
	// It runs on the store stage's goroutines, concurrently.
	OnStored func(rows []Row, committed time.Time)
	// OnDead, if not nil, is called with the reason of each dead letter
	// as it is made.
	OnDead func(reason string)

	Observe market.Observe // logs and traces

	Bars BarsConfig // the bars computed besides; the zero value computes none
	// Repartition, if set, names a topic through which the input is
	// re-keyed by symbol: for an input topic not keyed by symbol (see
	// StartKafka).
	Repartition string
}

// Kafka is the pipeline on Kafka and ClickHouse, started by StartKafka.
type Kafka struct {
	Pipeline *sluice.Pipeline
	Source   *kafkax.Source
	// Repartitioned reads the repartition topic (KafkaConfig.Repartition)
	// in the same group; nil without one.
	Repartitioned *kafkax.Source
	Sink          *kafkax.Sink
	Writer        *clickhousex.Writer[Row]

	stored, dead atomic.Int64
	exactlyOnce  bool

	bars             *clickhousex.Writer[market.Bar]
	barsStored, late atomic.Int64
}

// Stored returns the rows committed in ClickHouse so far.
func (k *Kafka) Stored() int64 { return k.stored.Load() }

// Dead returns the dead letters made so far.
func (k *Kafka) Dead() int64 { return k.dead.Load() }

// Close closes the source, committing what it settled (the error says if
// that failed: those records are read again), and the sink. Call it after
// the pipeline's Wait.
func (k *Kafka) Close() error {
	if k.exactlyOnce {
		k.Sink.Close() // leaves the shared client to the source
		return k.Source.Close()
	}
	err := k.Source.Close()
	if k.Repartitioned != nil {
		err = errors.Join(err, k.Repartitioned.Close())
	}
	k.Sink.Close()
	return err
}

// StartKafka starts the market-event pipeline on Kafka and ClickHouse:
//
//	consume → decode+validate+normalise (n workers) → collect (500, 50 ms)
//	        → enrich (2 workers, one reference lookup per batch) → check (unknown symbols to the dead letters)
//	        → fan-out, two copies of each row:
//	             store (2 inserts at once, each of every row waiting, up to 16384)
//	             encode → publish (batch produce to the output topic)
//	decode+validate's and check's dead letters → dead-letter → publish-dead
//
// A record is committed once its row is committed in ClickHouse and its
// enriched record is acknowledged by the broker: no stage settles
// anything; every item carries its record's receipt, and the core settles
// it once the item is stored (both copies, and a dead letter once
// produced). With ExactlyOnce, the enriched records and the dead letters
// are produced in the source's transactions, and an input's offset is
// committed in the transaction of the epoch in which it settled: what an
// aborted epoch produced is never seen by a read-committed consumer, and
// its inputs are delivered again. The topics and the table must exist. The caller waits for
// the pipeline, drains it to stop it, then calls Close; ctx ends the
// clients.
func StartKafka(ctx context.Context, db *sql.DB, cfg KafkaConfig) (*Kafka, error) {
	if cfg.ExactlyOnce > 0 && (cfg.Bars.Names.Table != "" || cfg.Repartition != "") {
		return nil, errors.New("onkafka: exactly once computes no bars and reads no repartition topic (a window holds receipts past the epoch; the repartition topic is read by a second source)")
	}
	observe := []kafkax.Option{kafkax.Propagate(cfg.Observe.Propagator), kafkax.Logger(cfg.Observe.Logger)}
	var sink *kafkax.Sink
	if cfg.ExactlyOnce == 0 {
		var err error
		if sink, err = kafkax.NewSink(ctx, cfg.Brokers, kafkax.SinkWorkers(2), observe[0], observe[1]); err != nil {
			return nil, err
		}
	}
	// A fetch waits for fetchBytes of records, or fetchWait: at a
	// sustained rate the broker would otherwise answer each fetch with the
	// few records that arrived since the last, and the source, and every
	// stage after it, would wake and spend a round trip's CPU on each.
	// It adds at most fetchWait to the produced → ClickHouse latency,
	// under the collect stage's 50 ms.
	opts := []kafkax.SourceOption{kafkax.MaxInFlight(cfg.MaxInFlight),
		kafkax.WithClient(kgo.FetchMinBytes(fetchBytes), kgo.FetchMaxWait(fetchWait)), observe[0], observe[1]}
	if cfg.Member {
		opts = append(opts, kafkax.WithClient(kgo.SessionTimeout(6*time.Second)))
	}
	if cfg.MemberID != "" {
		opts = append(opts, kafkax.WithClient(kgo.ClientID(cfg.MemberID)))
	}
	if cfg.ExactlyOnce > 0 {
		opts = append(opts, kafkax.Transactional(cfg.Names.Group+"-"+cfg.MemberID, cfg.ExactlyOnce))
	}
	src, err := kafkax.NewSource(ctx, cfg.Brokers, cfg.Names.Group, []string{cfg.Names.In}, opts...)
	if err != nil {
		if sink != nil {
			sink.Close()
		}
		return nil, err
	}
	if cfg.ExactlyOnce > 0 {
		// The sink produces in the source's transactions, through its client.
		if sink, err = kafkax.NewTxnSink(ctx, src, kafkax.SinkWorkers(2), observe[0], observe[1]); err != nil {
			src.Close()
			return nil, err
		}
	}
	var rep *kafkax.Source
	if cfg.Repartition != "" {
		if rep, err = kafkax.NewSource(ctx, cfg.Brokers, cfg.Names.Group, []string{cfg.Repartition}, opts...); err != nil {
			src.Close()
			sink.Close()
			return nil, err
		}
	}
	k := &Kafka{Source: src, Repartitioned: rep, Sink: sink, exactlyOnce: cfg.ExactlyOnce > 0,
		Writer: clickhousex.NewColumnWriter(db, cfg.Names.Table, rowColumns, clickhousex.SinkWorkers(storeInserts),
			clickhousex.Logger(cfg.Observe.Logger))}
	k.Pipeline = k.build(ctx, db, cfg)
	return k, nil
}

// store inserts a batch of rows, then counts them and calls cfg.OnStored;
// the stage that calls it settles the rows after.
func (k *Kafka) store(cfg KafkaConfig) func(context.Context, []Row) error {
	return func(ctx context.Context, rows []Row) error {
		if err := k.Writer.Write(ctx, rows); err != nil {
			return err
		}
		if cfg.OnStored != nil {
			cfg.OnStored(rows, time.Now())
		}
		k.stored.Add(int64(len(rows)))
		return nil
	}
}

func (k *Kafka) build(ctx context.Context, db *sql.DB, cfg KafkaConfig) *sluice.Pipeline {
	refs := market.NewRefs(cfg.Lookup)
	p := sluice.New(ctx, cfg.Observe.Options()...)
	msgs := kafkax.Read(p, "consume", k.Source)
	if cfg.Repartition != "" {
		msgs = k.repartition(p, cfg, msgs)
	}
	if cfg.Bars.Names.Table != "" {
		c := sluice.Broadcast(p, "to-bars", msgs, 2)
		msgs = c[0]
		k.buildBars(p, db, cfg, c[1])
	}
	var bad sluice.Stream[sluice.Failed[kafkax.Msg]]
	norm := sluice.Map(p, "decode", msgs, cfg.Decoders, func(_ context.Context, m kafkax.Msg) (Row, error) {
		at := time.Since(epoch)
		ev, err := market.Decode(m.Value())
		if err != nil {
			return Row{}, err
		}
		return Row{msg: m, at: at, tick: market.Normalise(ev)}, nil
	}, sluice.DeadLetter(&bad))
	batches := sluice.Batch(p, "collect", norm, 500, 50*time.Millisecond)
	enriched := sluice.Map(p, "enrich", batches, 2, func(_ context.Context, b []Row) ([]Row, error) {
		enrichRows(refs, b)
		return b, nil
	})
	var unknown sluice.Stream[sluice.Failed[Row]]
	good := sluice.Map(p, "check", sluice.Unbatch(p, "rows", enriched), 1, func(_ context.Context, r Row) (Row, error) {
		if r.ref == nil {
			return r, errUnknownSymbol
		}
		return r, nil
	}, sluice.DeadLetter(&unknown))
	copies := sluice.Broadcast(p, "fan-out", good, 2, sluice.Chunk(500))
	sluice.ForEachChunk(p, "store", copies[0], storeInserts, k.store(cfg),
		sluice.Gather(clickhousex.DefaultGather), sluice.Retry(3, 100*time.Millisecond, time.Second))
	// The encode stage (one goroutine) carves the records' values out of
	// a slab instead of allocating each; the key is the value's symbol
	// field. Neither is modified once handed on.
	var slab []byte
	outs := sluice.Map(p, "encode", copies[1], 1, func(_ context.Context, r Row) (kafkax.Out, error) {
		if cap(slab)-len(slab) < encodeRoom {
			slab = make([]byte, 0, encodeSlab)
		}
		start := len(slab)
		slab = market.EncodeEnriched(slab, r.tick, *r.ref)
		v := slab[start:len(slab):len(slab)]
		i := bytes.IndexByte(v, ',') + 1 // after the id
		key := v[i : i+len(r.tick.Symbol) : i+len(r.tick.Symbol)]
		return kafkax.Out{Topic: cfg.Names.Out, Key: key, Value: v, From: r.msg.Receipt}, nil
	}, sluice.Chunk(500))
	kafkax.Produce(p, "publish", outs, k.Sink)
	deadLetter := func(m kafkax.Msg, err error) kafkax.Out {
		if cfg.OnDead != nil {
			cfg.OnDead(err.Error())
		}
		k.dead.Add(1)
		return kafkax.DeadLetterOut(m, cfg.Names.Dead, err)
	}
	badOuts := sluice.Map(p, "dead-letter", bad, 1, func(_ context.Context, f sluice.Failed[kafkax.Msg]) (kafkax.Out, error) {
		return deadLetter(f.Item, f.Err), nil
	})
	unknownOuts := sluice.Map(p, "unknown", unknown, 1, func(_ context.Context, f sluice.Failed[Row]) (kafkax.Out, error) {
		return deadLetter(f.Item.msg, f.Err), nil
	})
	kafkax.Produce(p, "publish-dead", sluice.Merge(p, "dead", []sluice.Stream[kafkax.Out]{badOuts, unknownOuts}), k.Sink)
	return p
}

// enrichRows looks up the reference data of the symbols of batch b and
// points each row that has some at it.
func enrichRows(refs *market.RefStore, b []Row) {
	syms := make(map[string]market.RefData, market.NumSymbols())
	for i := range b {
		syms[b[i].tick.Symbol] = market.RefData{}
	}
	refs.Lookup(syms)
	found := make([]market.RefData, 0, len(syms))
	bySym := make(map[string]*market.RefData, len(syms))
	for s, d := range syms {
		found = append(found, d)
		bySym[s] = &found[len(found)-1]
	}
	for i := range b {
		b[i].ref = bySym[b[i].tick.Symbol] // nil when unknown
	}
}
