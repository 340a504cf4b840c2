package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/machine"
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

// peakRSS is this process's own peak resident set, the VmHWM line of
// /proc/self/status where it can be read; else fallback (rusage, which for
// a process started with vfork also counts its parent's memory).
func peakRSS(fallback int64) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fallback
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return fallback
}

// conditions describes the machine and toolchain, for every report.
func conditions() string {
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS=%d, %s %s/%s, %s",
		machine.CPUModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		time.Now().Format("2006-01-02"))
}
