package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/dash"
)

// LogHelp is the help's line for --log-format.
const LogHelp = "  --log-format F     log to stderr as text or json (default text)\n"

// CheckLogFormat returns what is wrong with --log-format's value, or "".
func CheckLogFormat(format string) string {
	if format != "text" && format != "json" {
		return fmt.Sprintf("--log-format must be text or json, got %q", format)
	}
	return ""
}

// Observer is how a run is seen: its log, the live page if any, and what
// a command adds (the sluice command's OpenTelemetry exporters) through
// Observe's fields, OnShow and OnStop.
type Observer struct {
	// Observe is what the pipeline and its connectors get; its Logger is
	// the run's log.
	Observe market.Observe
	live    *Dash
	shows   []func(*sluice.Pipeline)
	stops   []func() error
}

// StartObserving makes the run's logger: to stderr in format ("text" or
// "json"), and to the page's event list when live is not nil.
func StartObserving(format string, stderr io.Writer, live *Dash) *Observer {
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(stderr, nil)
	} else {
		h = slog.NewTextHandler(stderr, nil)
	}
	if live != nil {
		events := dash.Events(200, h)
		live.Board.ShowEvents(events)
		h = events
	}
	ob := &Observer{live: live}
	ob.Observe.Logger = slog.New(h)
	return ob
}

// OnShow adds fn to what Show calls with each pipeline the run starts.
func (ob *Observer) OnShow(fn func(*sluice.Pipeline)) { ob.shows = append(ob.shows, fn) }

// OnStop adds fn to what Stop calls, in the order added.
func (ob *Observer) OnStop(fn func() error) { ob.stops = append(ob.stops, fn) }

// Observing is what the pipeline and its connectors get; a nil Observer
// gives nothing.
func (ob *Observer) Observing() market.Observe {
	if ob == nil {
		return market.Observe{}
	}
	return ob.Observe
}

// Show adds p to the live page, if any, and gives it to the OnShow
// functions. A nil Observer does nothing.
func (ob *Observer) Show(p *sluice.Pipeline) {
	if ob == nil {
		return
	}
	if ob.live != nil {
		ob.live.Show(p)
	}
	for _, fn := range ob.shows {
		fn(p)
	}
}

// Stop calls the OnStop functions (not the page's Stop: the page outlives
// the observer, to show the end) and returns their errors joined.
func (ob *Observer) Stop() error {
	if ob == nil {
		return nil
	}
	var err error
	for _, fn := range ob.stops {
		err = errors.Join(err, fn())
	}
	return err
}
