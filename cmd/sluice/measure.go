package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
)

// figures are what seed 002 reported for a whole run, from /usr/bin/time.
type figures struct {
	N      int
	Wall   time.Duration
	User   time.Duration
	Sys    time.Duration
	MaxRSS int64 // bytes
}

func (f figures) CPU() time.Duration { return f.User + f.Sys }

// ValuesPerSec is the throughput over the whole run.
func (f figures) ValuesPerSec() float64 { return float64(f.N) / f.Wall.Seconds() }

// CPUPerMillion is CPU seconds (user+sys) spent per million values.
func (f figures) CPUPerMillion() float64 { return f.CPU().Seconds() / (float64(f.N) / 1e6) }

func (f figures) String() string {
	return fmt.Sprintf("runtime %.3f s  values/s %s  cpu %.3f s (user %.3f, sys %.3f)  cpu s/M values %.4f  max RSS %.1f MB",
		f.Wall.Seconds(), si(f.ValuesPerSec()), f.CPU().Seconds(), f.User.Seconds(), f.Sys.Seconds(),
		f.CPUPerMillion(), float64(f.MaxRSS)/1e6)
}

// measure takes figures for this process, from start to stop.
type measure struct {
	start time.Time
	ru    syscall.Rusage
}

func startMeasure() measure {
	m := measure{start: time.Now()}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &m.ru)
	return m
}

func (m measure) stop(n int) figures {
	wall := time.Since(m.start)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return figures{
		N: n, Wall: wall,
		User:   time.Duration(ru.Utime.Nano() - m.ru.Utime.Nano()),
		Sys:    time.Duration(ru.Stime.Nano() - m.ru.Stime.Nano()),
		MaxRSS: peakRSS(ru.Maxrss * 1024), // Linux reports KiB
	}
}

// peakRSS is this process's own peak resident set, from /proc where it can
// be read; else fallback (rusage, which for a child started with vfork also
// counts its parent's memory).
func peakRSS(fallback int64) int64 {
	if rss, ok := bench.PeakRSS(bench.OwnPeakRSS()); ok {
		return rss
	}
	return fallback
}

// fromProcess takes figures for a finished child process; its MaxRSS is
// rusage's, an upper bound (see peakRSS) that callers replace when the
// child printed its own.
func fromProcess(n int, wall time.Duration, ps *os.ProcessState) figures {
	f := figures{N: n, Wall: wall, User: ps.UserTime(), Sys: ps.SystemTime()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		f.MaxRSS = ru.Maxrss * 1024
	}
	return f
}

// median returns the figures whose wall time is the median of runs, with
// each other figure replaced by its own median.
func median(runs []figures) figures {
	pick := func(key func(figures) int64) int64 {
		vs := make([]int64, len(runs))
		for i, r := range runs {
			vs[i] = key(r)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	return figures{
		N:      runs[0].N,
		Wall:   time.Duration(pick(func(f figures) int64 { return int64(f.Wall) })),
		User:   time.Duration(pick(func(f figures) int64 { return int64(f.User) })),
		Sys:    time.Duration(pick(func(f figures) int64 { return int64(f.Sys) })),
		MaxRSS: pick(func(f figures) int64 { return f.MaxRSS }),
	}
}

// conditions describes the machine and toolchain, for every report.
func conditions() string {
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS=%d, %s %s/%s, %s",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		time.Now().Format("2006-01-02"))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
