package main

import (
	"io"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

// interrupts turns SIGINT and SIGTERM into a drain (see market.Interrupts).
type interrupts = market.Interrupts

// catchSignals starts catching SIGINT and SIGTERM until Stop is called.
func catchSignals(stderr io.Writer) *interrupts { return market.CatchSignals("loadtest", stderr) }
