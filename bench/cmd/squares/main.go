// Command squares is seed 002's comparison as the seed made it: three
// minimal programs (bench/seed002: naive, with plain channels and the
// standard library only; sluice, with sluice's core only; hand, the
// hand-written reference), each built with go build and run as its own
// process, several runs interleaved, reported as runtime, values/s, CPU,
// CPU seconds per million values and max RSS, medians with min–max.
//
//	go run ./bench/cmd/squares [-n 50000000] [-w 3] [-count 5]
//
// Run it from the repository root or from bench/.
package main

import (
	"os"

	"github.com/sluicehq/sluice/bench/internal/lab"
)

func main() { os.Exit(lab.SquaresMain(os.Args[1:], os.Stdout, os.Stderr)) }
