// Command windows is the lab's windows experiment as whole programs, one
// variant per run, so that each one's peak memory is its own: per symbol,
// one-second tumbling VWAP windows by event time over synthetic trades,
// read as JSON lines from a file (-in) or, for the cheap-items runs, made
// in memory (-cheap -n N). It prints its answer and its VmHWM.
//
//	windows -variant loop|chans|sluice (-in FILE | -cheap -n N) [-cpuprofile FILE]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/sluicehq/sluice/bench/internal/windows"
)

func main() {
	variant := flag.String("variant", "loop", "loop, chans or sluice")
	in := flag.String("in", "", "JSON lines of trades to read")
	cheap := flag.Bool("cheap", false, "make the trades in memory, no JSON")
	n := flag.Int("n", 0, "trades to make with -cheap")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if (*in != "") == *cheap || *cheap && *n < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "windows: give -in FILE, or -cheap and -n ≥ 1")
		os.Exit(2)
	}
	run, ok := variants[*variant]
	if !ok {
		fmt.Fprintf(os.Stderr, "windows: no variant %q\n", *variant)
		os.Exit(2)
	}
	var src source
	if *cheap {
		src = source{n: *n}
	} else {
		f, err := os.Open(*in)
		if err != nil {
			fmt.Fprintln(os.Stderr, "windows:", err)
			os.Exit(1)
		}
		defer f.Close()
		src = source{file: f}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "windows:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "windows:", err)
		os.Exit(1)
	}
	windows.Report(res)
}

// source is where a variant's trades come from: JSON lines in a file, or
// n made in memory.
type source struct {
	file *os.File
	n    int
}

var variants = map[string]func(source) (windows.Result, error){
	"loop":   runLoop,
	"chans":  runChans,
	"sluice": runSluice,
}
