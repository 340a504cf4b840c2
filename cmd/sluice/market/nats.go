package market

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice"
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// The NATS JetStream pipeline's streams and subjects. RunNATS deletes and
// re-creates the streams, empty, when it starts.
const (
	NATSIn       = "DEMO_MARKET"
	NATSOut      = "DEMO_ENRICHED"
	NATSDead     = "DEMO_DEAD"
	NATSInSubj   = "market.events"
	NATSOutSubj  = "market.enriched"
	NATSDeadSubj = "market.dead"
	natsDurable  = "demo"
)

// ReasonHeader is the header of a NATS dead letter that says why the event
// was dead-lettered.
const ReasonHeader = "Demo-Reason"

// NATSConfig is what RunNATS generates and how the pipeline runs.
type NATSConfig struct {
	Events      int           // events to generate, when Duration is 0
	Duration    time.Duration // generate for this long instead of Events
	Rate        int           // events per second to aim at; 0: as fast as the server stores them
	Malformed   float64       // fraction of events made malformed
	Decoders    int           // decode+validate workers
	Lookup      time.Duration // one reference lookup's round trip (one per batch)
	MaxInFlight int           // the consumer's MaxAckPending
	Storage     jetstream.StorageType

	// Progress, if not nil, gets a line a second.
	Progress io.Writer
	// OnStart, if not nil, gets the pipeline before it runs (to show it
	// on a dash page).
	OnStart func(*sluice.Pipeline)

	Observe Observe // logs and traces
}

// NATSResult is what one RunNATS measured.
type NATSResult struct {
	Generated int64            // events the server stored in the input stream
	Stored    int64            // enriched events stored in the output stream
	Dead      int64            // dead letters stored
	Reasons   map[string]int64 // dead letters by reason
	Wall      time.Duration    // from the generator's start until every event was stored (or the drain ended)
	GenWall   time.Duration    // until the generator had every event stored
	Latency   Latencies        // fetched from the input stream → result stored
	EndToEnd  Latencies        // input stored → result stored, one event in 8
	Lookups   int64
	Batches   int64
	Source    natsx.SourceStats
	Sink      natsx.SinkStats
	Stages    sluice.Snapshot
	Client    nats.Statistics // the pipeline's connection
	Drained   error           // the cause of a drain that ended the run early, or nil
}

// PerSec is the events settled (stored or dead-lettered) per second.
func (r NATSResult) PerSec() float64 { return float64(r.Stored+r.Dead) / r.Wall.Seconds() }

// ResetStream deletes the stream name and creates it again, empty, for
// subject.
func ResetStream(ctx context.Context, js jetstream.JetStream, name, subject string, storage jetstream.StorageType) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("resetting stream %s: %w", name, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: storage}); err != nil {
		return fmt.Errorf("creating stream %s: %w", name, err)
	}
	return nil
}

// RunNATS resets the pipeline's streams on the server at url, generates
// events into the input stream and runs the pipeline over them until every
// one is stored, or until drain is done: then the generator stops, the
// pipeline drains (its source takes no new message; what it holds is
// stored and acknowledged) and the result covers what was stored.
func RunNATS(ctx, drain context.Context, url string, cfg NATSConfig) (res NATSResult, err error) {
	genConn, err := natsx.Connect(url, nats.Name("sluice-demo-generator"))
	if err != nil {
		return res, err
	}
	defer genConn.Close()
	nc, err := natsx.Connect(url, nats.Name("sluice-demo-pipeline"))
	if err != nil {
		return res, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return res, err
	}
	for _, s := range [][2]string{{NATSIn, NATSInSubj}, {NATSOut, NATSOutSubj}, {NATSDead, NATSDeadSubj}} {
		if err := ResetStream(ctx, js, s[0], s[1], cfg.Storage); err != nil {
			return res, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	observe := []natsx.Option{natsx.Propagate(cfg.Observe.Propagator), natsx.Logger(cfg.Observe.Logger)}
	src, err := natsx.NewSource(ctx, js, NATSIn, natsDurable,
		natsx.FetchBatch(500), natsx.MaxInFlight(cfg.MaxInFlight), natsx.AckWait(30*time.Second), observe[0], observe[1])
	if err != nil {
		return res, err
	}
	sink, err := natsx.NewSink(ctx, js, observe[0], observe[1])
	if err != nil {
		return res, err
	}
	defer sink.Close()
	// Once every generated event is stored, the pipeline drains: its
	// source takes nothing more, and it ends as it does at a signal.
	complete, finish := context.WithCancel(ctx)
	defer finish()
	c := &natsCounts{tally: newTally(), finish: finish}
	refs := NewRefs(cfg.Lookup)
	p := natsPipeline(ctx, src, storedBy(sink, c.onStored), refs, cfg.Decoders, cfg.Observe)
	p.DrainOn(drain)
	p.DrainOn(complete)
	if cfg.OnStart != nil {
		cfg.OnStart(p)
	}
	res, err = c.run(ctx, drain, p, src, genConn, cfg)
	cancel(nil)
	if err != nil {
		return res, err
	}
	res.Source, res.Sink = src.Stats(), sink.Stats()
	res.Lookups = refs.Lookups()
	res.Client = nc.Stats()
	return res, nil
}

// item travels through the pipeline after normalisation: the message it
// came from (to be acknowledged once its result is stored) and its tick.
type item struct {
	msg  natsx.Msg
	tick Tick
}

// decoded is an event after the decode stage.
type decoded struct {
	msg natsx.Msg
	ev  Event
}

// natsPipeline builds the market-event pipeline on NATS JetStream:
//
//	consume → decode+validate (n workers) → normalise (1) → collect (500, 50 ms)
//	        → enrich (2 workers, one reference lookup per batch) → publish (2 workers)
//	decode+validate's dead letters → dead-letter → publish-dead (2 workers)
//
// A malformed event fails decode+validate, whose error policy routes it,
// with the error as its reason, to the dead-letter stream; an event whose
// symbol has no reference data is found by the batch lookup, so enrich
// turns it into a dead letter itself. Both are published to the
// dead-letter subject with their reason and acknowledged once stored.
// write stores a batch (see storedBy); the publish stages acknowledge
// what it stored.
func natsPipeline(ctx context.Context, src *natsx.Source, write func(context.Context, []outMsg) error, refs *RefStore, decoders int, obs Observe) *sluice.Pipeline {
	p := sluice.New(ctx, obs.Options()...)
	msgs := natsx.Read(p, "consume", src)
	var bad sluice.Stream[sluice.Failed[natsx.Msg]]
	dec := sluice.Map(p, "decode", msgs, decoders, func(_ context.Context, m natsx.Msg) (decoded, error) {
		ev, err := Decode(m.Data())
		return decoded{msg: m, ev: ev}, err
	}, sluice.DeadLetter(&bad))
	norm := sluice.Map(p, "normalise", dec, 1, func(_ context.Context, d decoded) (item, error) {
		return item{msg: d.msg, tick: Normalise(d.ev)}, nil
	})
	batches := sluice.Batch(p, "collect", norm, 500, 50*time.Millisecond)
	outs := sluice.Map(p, "enrich", batches, 2, func(_ context.Context, b []item) ([]outMsg, error) {
		return enrich(b, refs), nil
	})
	retry := sluice.Retry(8, 50*time.Millisecond, 2*time.Second) // a server restart is a pause
	sluice.ForEach(p, "publish", outs, 2, write, retry)
	dead := sluice.Map(p, "dead-letter", bad, 1, func(_ context.Context, f sluice.Failed[natsx.Msg]) (outMsg, error) {
		return deadLetter(f.Item, f.Err.Error()), nil
	})
	sluice.ForEachChunk(p, "publish-dead", dead, 2, write, retry)
	return p
}

// outMsg is a message to publish with the message it came from, which the
// run's measurements read; its Out's From settles that message.
type outMsg struct {
	natsx.Out
	in natsx.Msg
}

// storedBy returns the pipeline's write: sink.Write, as natsx.Publish
// calls it, then onStored with the batch it stored.
func storedBy(sink *natsx.Sink, onStored func([]outMsg)) func(context.Context, []outMsg) error {
	return func(ctx context.Context, b []outMsg) error {
		outs := make([]natsx.Out, len(b))
		for i := range b {
			outs[i] = b[i].Out
		}
		if err := sink.Write(ctx, outs); err != nil {
			return err
		}
		onStored(b)
		return nil
	}
}

// deadLetter is the message that dead-letters m for reason.
func deadLetter(m natsx.Msg, reason string) outMsg {
	return outMsg{natsx.Out{Subject: NATSDeadSubj, Data: m.Data(), ID: m.ID(), From: m.Receipt,
		Header: nats.Header{ReasonHeader: []string{reason}}}, m}
}

// enrich turns a batch into messages to publish, looking up the reference
// data of all its symbols at once; an event whose symbol has none is
// dead-lettered.
func enrich(b []item, refs *RefStore) []outMsg {
	syms := make(map[string]RefData, len(symbols))
	for _, it := range b {
		syms[it.tick.Symbol] = RefData{}
	}
	refs.Lookup(syms)
	outs := make([]outMsg, len(b))
	buf := make([]byte, 0, 96*len(b))
	for i, it := range b {
		r, ok := syms[it.tick.Symbol]
		if !ok {
			outs[i] = deadLetter(it.msg, "unknown symbol")
			continue
		}
		n := len(buf)
		buf = EncodeEnriched(buf, it.tick, r)
		outs[i] = outMsg{natsx.Out{Subject: NATSOutSubj, Data: buf[n:len(buf):len(buf)], ID: it.msg.ID(), From: it.msg.Receipt}, it.msg}
	}
	return outs
}
