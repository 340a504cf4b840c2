package market

import (
	"log/slog"

	"github.com/sluicehq/sluice"
)

// Observe is how the pipeline and its connectors tell an operator what
// they do; every field is optional, and the zero Observe costs nothing.
type Observe struct {
	// Logger gets the pipeline's log (sluice.Logger) and the connectors'.
	Logger *slog.Logger
	// Tracer makes a span per call of each stage (sluice.Tracing).
	Tracer sluice.Tracer
	// Propagator carries trace context from the records read into their
	// receipts, and from the receipts into the records written.
	Propagator sluice.Propagator
}

// Options are the pipeline's options for o, after its name ("market").
func (o Observe) Options() []sluice.Option {
	opts := []sluice.Option{sluice.Named("market")}
	if o.Logger != nil {
		opts = append(opts, sluice.Logger(o.Logger))
	}
	if o.Tracer != nil {
		opts = append(opts, sluice.Tracing(o.Tracer))
	}
	return opts
}
