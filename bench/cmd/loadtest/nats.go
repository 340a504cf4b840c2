package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/bench/internal/services/brokers"
	"github.com/sluicehq/sluice/cmd/sluice/market"
)

// natsRun is what `loadtest nats` measured: the pipeline's result and
// this process's figures over it.
type natsRun struct {
	market.NATSResult
	fig figures
}

func (r natsRun) print(w io.Writer) {
	if r.Drained != nil {
		fmt.Fprintf(w, "interrupted (%v): drained: the source took no new events; of the %d it had received, %d were stored and acknowledged, %d handed back unprocessed (nak), %d unsettled\n",
			r.Drained, r.Source.Received, r.Source.Acked, r.Source.HandedBack, r.Source.InFlight)
	}
	n := r.Generated // all of them were stored, unless drained
	if r.Drained != nil {
		n = r.Stored + r.Dead
	}
	fmt.Fprintf(w, "demo: %d events in %.2fs = %s events/s; %d enriched and stored, %d dead-lettered %v\n",
		n, r.Wall.Seconds(), si(r.PerSec()), r.Stored, r.Dead, r.Reasons)
	fmt.Fprintf(w, "generator: %d events stored in the input stream in %.2fs = %s events/s, concurrently with the pipeline\n",
		r.Generated, r.GenWall.Seconds(), si(float64(r.Generated)/r.GenWall.Seconds()))
	fmt.Fprintf(w, "latency, fetched → stored: p50 %s  p99 %s  max %s\n", ms(r.Latency.Q(0.5)), ms(r.Latency.Q(0.99)), ms(r.Latency.Max()))
	fmt.Fprintf(w, "latency, input stored → output stored (1 in 8): p50 %s  p99 %s  max %s\n", ms(r.EndToEnd.Q(0.5)), ms(r.EndToEnd.Q(0.99)), ms(r.EndToEnd.Max()))
	fmt.Fprintf(w, "reference lookups: %d for %d batches\n", r.Lookups, r.Batches)
	fmt.Fprintf(w, "source: %+v\nsink: %+v\nclient: %d msgs out, %d in, %d reconnects\n", r.Source, r.Sink, r.Client.OutMsgs, r.Client.InMsgs, r.Client.Reconnects)
	fmt.Fprintf(w, "process (pipeline + generator + embedded server if any): %s, %.1f µs CPU per event\n",
		r.fig, r.fig.CPU().Seconds()*1e6/float64(max(1, r.Generated)))
	fmt.Fprintln(w, "where the pipeline's time goes (per stage, summed over its goroutines):")
	for _, s := range r.Stages.Stages {
		fmt.Fprintf(w, "  %-18s %2d goroutines  in %8d  out %8d  failed %6d  busy %7.2fs  waiting %7.2fs\n",
			s.Name, s.Workers, s.In, s.Out, s.Failed, s.Busy.Seconds(), s.Blocked.Seconds())
	}
}

func storageOf(f natsFlags) jetstream.StorageType {
	if f.storage == "memory" {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// natsConfig is the pipeline run that f asks for.
func natsConfig(f natsFlags, stdout io.Writer) market.NATSConfig {
	cfg := market.NATSConfig{Events: f.events, Duration: f.duration, Rate: f.rate, Malformed: f.malformed,
		Decoders: f.decoders, Lookup: f.lookup, MaxInFlight: f.inflight, Storage: storageOf(f)}
	if !f.quiet {
		cfg.Progress = stdout
	}
	return cfg
}

// demoNATS runs `loadtest nats`: the server (embedded unless --nats),
// the optional ceiling, the pipeline, and its summary. When in drains (a
// first SIGINT or SIGTERM), the pipeline stops taking events, finishes
// what it holds, and the summary covers what was stored; in (which may be
// nil) also removes the temporary store if a second signal ends the
// process at once.
func demoNATS(ctx context.Context, in *interrupts, f natsFlags, stdout, stderr io.Writer) (err error) {
	drain := in.Draining()
	url := f.url
	if url == "" {
		srv, err := brokers.StartNATS("sluice-loadtest-")
		if err != nil {
			return err
		}
		defer srv.Stop()
		in.OnExit(func() { os.RemoveAll(srv.Dir) }) // a second signal ends the process at once
		url = srv.URL
		fmt.Fprintf(stdout, "embedded NATS server at %s, store in %s\n", url, srv.Dir)
	}
	fmt.Fprintf(stdout, "conditions: %s\n", conditions())

	var ceiling float64
	if f.compare {
		var ran bool
		ceiling, ran, err = runCeilingFirst(ctx, drain, stdout, "broker ceiling (bare nats.go loop: publish, fetch, publish, ack)",
			func(ctx context.Context) (ceilResult, error) { return runCeiling(ctx, url, f) })
		if !ran {
			return err
		}
	}
	stopProfile, err := profile(f.pipeFlags)
	if err != nil {
		return err
	}
	m := startMeasure()
	res, err := market.RunNATS(ctx, drain, url, natsConfig(f, stdout))
	fig := m.stop()
	stopProfile()
	if err != nil {
		return err
	}
	r := natsRun{res, fig}
	r.print(stdout)
	if f.compare && ceiling > 0 {
		fmt.Fprintf(stdout, "demo / ceiling: %s / %s events/s = %.0f %%\n", si(r.PerSec()), si(ceiling), 100*r.PerSec()/ceiling)
	}
	return nil
}

// runCeilingFirst runs a ceiling (named what) before the pipeline, and
// returns its events/s. ran is false when the pipeline must not run: err,
// or nil after drain (a signal) stopped the ceiling.
func runCeilingFirst(ctx, drain context.Context, stdout io.Writer, what string, run func(context.Context) (ceilResult, error)) (perSec float64, ran bool, err error) {
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(drain, stop)()
	res, err := run(cctx)
	if drain.Err() != nil {
		fmt.Fprintf(stdout, "interrupted (%v) while measuring the ceiling: the pipeline did not run\n", context.Cause(drain))
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("ceiling: %w", err)
	}
	fmt.Fprintf(stdout, "%s: %d events in %.2fs = %s events/s\n", what, res.events, res.wall.Seconds(), si(res.perSec()))
	return res.perSec(), true, nil
}

// si and ms format rates and durations as the market package's summaries
// do.
func si(v float64) string { return market.SI(v) }

func ms(d time.Duration) string { return market.Ms(d) }
