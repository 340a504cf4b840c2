package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// figures are what this process spent over a run: its wall time, CPU time
// and peak memory. The demo prints them under its own rates, so that the
// CPU per event is plain to see.
type figures struct {
	Wall   time.Duration
	User   time.Duration
	Sys    time.Duration
	MaxRSS int64 // bytes
}

func (f figures) CPU() time.Duration { return f.User + f.Sys }

func (f figures) String() string {
	return fmt.Sprintf("runtime %.3f s  cpu %.3f s (user %.3f, sys %.3f)  max RSS %.1f MB",
		f.Wall.Seconds(), f.CPU().Seconds(), f.User.Seconds(), f.Sys.Seconds(), float64(f.MaxRSS)/1e6)
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

func (m measure) stop() figures {
	wall := time.Since(m.start)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return figures{
		Wall:   wall,
		User:   time.Duration(ru.Utime.Nano() - m.ru.Utime.Nano()),
		Sys:    time.Duration(ru.Stime.Nano() - m.ru.Stime.Nano()),
		MaxRSS: peakRSS(ru.Maxrss * 1024), // Linux reports KiB
	}
}

// peakRSS is this process's own peak resident set, the VmHWM line of
// /proc/self/status where it can be read; else fallback (rusage, which for
// a process started with vfork also counts its parent's memory).
func peakRSS(fallback int64) int64 {
	if kb, ok := procField("/proc/self/status", "VmHWM"); ok {
		if n, err := strconv.ParseInt(strings.TrimSuffix(kb, " kB"), 10, 64); err == nil {
			return n * 1024
		}
	}
	return fallback
}

// conditions describes the machine and toolchain, for the demo's report.
func conditions() string {
	cpu, ok := procField("/proc/cpuinfo", "model name")
	if !ok {
		cpu = "unknown CPU"
	}
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS=%d, %s %s/%s, %s",
		cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		time.Now().Format("2006-01-02"))
}

// procField returns the value of the first "key: value" line of a /proc
// file, trimmed, and whether there was one.
func procField(file, key string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
