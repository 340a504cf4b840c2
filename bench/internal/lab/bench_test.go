package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func checkConfig() *Config {
	return &Config{Mode: Check, Count: 1, Timeout: 5 * time.Minute}
}

// Every in-process experiment runs every variant at tiny sizes and checks
// its answer; none may fail, and only the documented cases are skipped.
func TestEveryInProcessVariantComputesTheRightAnswer(t *testing.T) {
	// Experiments whose variants run as processes of their own report
	// their peak memory, not allocations.
	processes := map[string]bool{"windows": true}
	for _, e := range Experiments() {
		if e.Name == "squares" {
			continue // whole programs: see TestSquaresProgramsPrintTheRightSum
		}
		t.Run(e.Name, func(t *testing.T) {
			res := Run(checkConfig(), []*Experiment{e})
			if len(res.Rows) == 0 {
				t.Fatal("got no rows")
			}
			for _, r := range res.Rows {
				switch {
				case r.failed():
					t.Errorf("%s / %s FAILED: %s", r.Group, r.Variant, r.Note)
				case r.Status == statusSkipped && !(e.Name == "elastic" || e.Name == "sum"):
					t.Errorf("%s / %s skipped: %s", r.Group, r.Variant, r.Note)
				case r.Status == statusOK && (r.Runs != 1 || !(r.NsPerItem > 0) || r.Allocs == nil && !processes[e.Name]):
					t.Errorf("%s / %s: runs %d, ns/item %v, allocs %v; want 1 run with figures", r.Group, r.Variant, r.Runs, r.NsPerItem, r.Allocs)
				}
			}
		})
	}
}

// Seed 002's Go programs are built with go build and run as processes;
// Rust's run when cargo is installed, and are skipped, saying so, when not.
func TestSquaresProgramsPrintTheRightSum(t *testing.T) {
	res := Run(checkConfig(), []*Experiment{squaresExperiment()})
	for _, r := range res.Rows {
		switch {
		case r.failed():
			t.Errorf("%s FAILED: %s", r.Variant, r.Note)
		case r.Status == statusSkipped && !(strings.HasPrefix(r.Variant, "Rust") && strings.Contains(r.Note, "cargo not found")):
			t.Errorf("%s skipped: %s", r.Variant, r.Note)
		case r.Status == statusOK && (r.Metrics["max_rss_mb"] <= 0 || r.Metrics["cpu_s_per_M"] < 0):
			t.Errorf("%s: metrics %v, want max RSS and CPU figures", r.Variant, r.Metrics)
		}
	}
}

func TestRustRowsAreSkippedWithoutCargo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cfg := checkConfig()
	cfg.Variants = nil
	res := Run(cfg, []*Experiment{squaresExperiment()})
	n := 0
	for _, r := range res.Rows {
		if strings.HasPrefix(r.Variant, "Rust") {
			n++
			if r.Status != statusSkipped || !strings.HasPrefix(r.Note, "cargo not found;") {
				t.Errorf("%s: got %s %q, want skipped \"cargo not found\"", r.Variant, r.Status, r.Note)
			}
		}
	}
	if n != 3 {
		t.Fatalf("got %d Rust rows, want 3", n)
	}
}

// fake is an experiment of one group whose variants are given as rounds.
func fake(rounds map[string]func(Metrics) error, baseline string) *Experiment {
	return &Experiment{
		Name: "fake", Seed: "000", Title: "a fake", Unit: "item",
		Cases: func(*Config) []Case {
			var cs []Case
			for _, name := range []string{baseline, "wrong", "slow", "panics", "hangs", "fast"} {
				round, ok := rounds[name]
				if !ok {
					continue
				}
				cs = append(cs, Case{Group: "g", Variant: name, Baseline: name == baseline, Items: 10,
					Setup: func() (*Instance, error) { return &Instance{Round: round}, nil }})
			}
			return cs
		},
	}
}

func TestWrongPanickingAndHungVariantsAreFailed(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	exp := fake(map[string]func(Metrics) error{
		"base":   func(Metrics) error { return nil },
		"wrong":  func(Metrics) error { return errors.New("sum = 3, want 4") },
		"panics": func(Metrics) error { panic("boom") },
		"hangs":  func(Metrics) error { <-release; return nil },
	}, "base")
	cfg := checkConfig()
	cfg.Timeout = 100 * time.Millisecond
	res := Run(cfg, []*Experiment{exp})
	want := map[string]string{"base": statusOK, "wrong": statusFailed, "panics": statusFailed, "hangs": statusFailed}
	for _, r := range res.Rows {
		if r.Status != want[r.Variant] {
			t.Errorf("%s: got %s (%s), want %s", r.Variant, r.Status, r.Note, want[r.Variant])
		}
	}
	if !res.Failed() {
		t.Fatal("Failed() = false, want true")
	}
	var text, md bytes.Buffer
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, res); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String()} {
		for _, s := range []string{"FAILED: warm-up round: sum = 3, want 4", "panic: boom at ", "bench_test.go:", "timed out"} {
			if !strings.Contains(out, s) {
				t.Errorf("report lacks %q:\n%s", s, out)
			}
		}
	}
}

func TestMainExitsOneOnAFailedRowAndZeroOtherwise(t *testing.T) {
	defer func(old func() []*Experiment) { experiments = old }(experiments)
	for _, tc := range []struct {
		wrong bool
		want  int
	}{{false, 0}, {true, 1}} {
		rounds := map[string]func(Metrics) error{"base": func(Metrics) error { return nil }}
		if tc.wrong {
			rounds["wrong"] = func(Metrics) error { return errors.New("lost 1 value") }
		}
		experiments = func() []*Experiment { return []*Experiment{fake(rounds, "base")} }
		var out, errOut bytes.Buffer
		if got := Main([]string{"--check"}, &out, &errOut); got != tc.want {
			t.Fatalf("wrong variant %v: exit %d, want %d; stderr %q", tc.wrong, got, tc.want, errOut.String())
		}
		if tc.wrong && !strings.Contains(errOut.String(), "FAILED: fake / g / wrong: warm-up round: lost 1 value") {
			t.Fatalf("stderr %q does not name the failed row", errOut.String())
		}
	}
}

func TestSpeedupIsTheBaselineCostOverTheRowCost(t *testing.T) {
	exp := fake(map[string]func(Metrics) error{
		"base": func(Metrics) error { time.Sleep(4 * time.Millisecond); return nil },
		"fast": func(Metrics) error { time.Sleep(time.Millisecond); return nil },
	}, "base")
	cfg := &Config{Mode: Quick, Count: 3, Time: 8 * time.Millisecond, Timeout: time.Minute}
	res := Run(cfg, []*Experiment{exp})
	base, fast := res.Rows[0], res.Rows[1]
	if base.Speedup == nil || *base.Speedup != 1 || fast.Speedup == nil {
		t.Fatalf("speed-ups %v, %v; want 1 and a figure", base.Speedup, fast.Speedup)
	}
	if got, want := *fast.Speedup, base.NsPerItem/fast.NsPerItem; got != want || got < 1.5 {
		t.Fatalf("speed-up %.2f, want %.2f (and clearly above 1)", got, want)
	}
	if fast.Runs != 3 || fast.NsMin > fast.NsPerItem || fast.NsMax < fast.NsPerItem {
		t.Fatalf("runs %d, min %v ≤ median %v ≤ max %v does not hold", fast.Runs, fast.NsMin, fast.NsPerItem, fast.NsMax)
	}
}

func TestVariantFilterKeepsBaselines(t *testing.T) {
	defer func(old func() []*Experiment) { experiments = old }(experiments)
	experiments = func() []*Experiment {
		return []*Experiment{fake(map[string]func(Metrics) error{
			"base": func(Metrics) error { return nil },
			"fast": func(Metrics) error { return nil },
			"slow": func(Metrics) error { return nil },
		}, "base")}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"--check", "--variants", "FAST", "--format", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r Row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, r.Variant)
	}
	if strings.Join(got, ",") != "base,fast" {
		t.Fatalf("got variants %v, want [base fast]", got)
	}
}

func TestJSONRowsHaveStableFieldNames(t *testing.T) {
	res := Run(checkConfig(), []*Experiment{fake(map[string]func(Metrics) error{
		"base": func(m Metrics) error { m["p99_ms"] = 1.5; return nil },
	}, "base")})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(buf.Bytes(), &obj); err != nil {
		t.Fatalf("%v in %q", err, buf.String())
	}
	for _, k := range []string{"experiment", "seed", "group", "variant", "baseline", "status", "unit", "items_per_run", "runs",
		"ns_per_item", "ns_per_item_min", "ns_per_item_max", "items_per_sec", "allocs_per_item", "bytes_per_item", "speedup",
		"metrics", "cpu", "gomaxprocs", "go_version", "date", "mode"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("row lacks %q: %s", k, buf.String())
		}
	}
}

func TestHTMLReportIsSelfContainedWithAChartPerExperiment(t *testing.T) {
	res := Run(checkConfig(), []*Experiment{faninExperiment(), sumExperiment()})
	var buf bytes.Buffer
	if err := WriteHTML(&buf, res); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "src=", "href=\"http", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must not fetch anything", bad)
		}
	}
	// fanin: a line chart per series (10 and 50 per source); sum: bars.
	if got := strings.Count(page, "<svg"); got != 3 {
		t.Errorf("got %d charts, want 3", got)
	}
	if !strings.Contains(page, "<polyline") || !strings.Contains(page, "<rect") {
		t.Error("want lines for fanin and bars for sum")
	}
	if got, want := strings.Count(page, "<tr class="), len(res.Rows); got != want {
		t.Errorf("got %d table rows, want %d", got, want)
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("100, 10k,1.5M,2K")
	if err != nil || fmt.Sprint(got) != "[100 10000 1500000 2000]" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-5", "ten", "1e20"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"nosuch"}, {"--format", "xml"}, {"--sizes", "x"}, {"--variants", "("}, {"--count", "-1"}, {"--bogus"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 2 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errOut.String())
		}
	}
}
