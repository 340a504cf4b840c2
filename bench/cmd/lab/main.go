// Command lab is sluice's benchmark lab: every experiment of the seeds run
// side by side with sluice, with the seeds' own variants, peer libraries
// (rill, conc, lo, chanx, eapache/channels) and Rust reference programs,
// every answer checked.
//
//	go run ./bench/cmd/lab [--quick | --check] [--format text|json|markdown] [--html FILE] [NAME…]
//	go run ./bench/cmd/lab list [NAME…]
//
// Run it from the repository root or from bench/ (seed 002's programs are
// built with go build from there). `go run ./bench/cmd/lab -h` lists the
// experiments and flags.
package main

import "github.com/sluicehq/sluice/bench/internal/lab"

func main() { lab.Program.Main() }
