package docs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dash"
)

// The messages troubleshooting.md quotes, each made by the code: a
// ```text block after <!-- message: NAME --> must be what messages[NAME]
// returns.
var messages = map[string]func(t *testing.T) string{
	"never-consumed": func(t *testing.T) string {
		return panicOf(func() {
			p := sluice.New(context.Background(), sluice.Named("etl"))
			sluice.Map(p, "parse", sluice.FromSlice(p, "lines", []string{"1", "x"}), 2, atoi)
			p.Wait()
		})
	},
	"would-wait": func(t *testing.T) string {
		return panicOf(func() {
			p := sluice.New(context.Background(), sluice.Named("etl"))
			var dead sluice.Stream[sluice.Failed[string]]
			nums := sluice.Map(p, "parse", sluice.FromSlice(p, "lines", []string{"1", "x"}), 2, atoi, sluice.DeadLetter(&dead))
			sluice.Reduce(p, "sum", nums, 0, func(a, v int) int { return a + v }).Value()
		})
	},
	"bottleneck-rule": func(t *testing.T) string { return dash.BottleneckRule },
	"items-failed": func(t *testing.T) string {
		var log bytes.Buffer
		p := sluice.New(context.Background(), sluice.Named("etl"), sluice.Logger(textLogger(&log)))
		nums := sluice.Map(p, "parse", sluice.FromSlice(p, "lines", []string{"1", "x"}), 2, atoi, sluice.SkipErrors())
		sluice.ForEach(p, "store", nums, 1, func(context.Context, int) error { return nil })
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		return linesOf(log.String(), `msg="items failed"`)
	},
	"drain": func(t *testing.T) string {
		var log bytes.Buffer
		synctest.Test(t, func(t *testing.T) {
			p := sluice.New(context.Background(), sluice.Named("etl"), sluice.Logger(textLogger(&log)), sluice.DrainGrace(0))
			src := sluice.From(p, "events", func(ctx context.Context, out *sluice.Emitter[int]) error {
				out.Send(1)
				out.Flush()
				<-out.Done()
				return nil
			})
			sluice.ForEach(p, "store", src, 1, func(context.Context, int) error { return fmt.Errorf("down") },
				sluice.Retry(5, time.Second, time.Second), sluice.SkipErrors())
			synctest.Wait() // the retry waits out its backoff
			p.Drain()
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
		})
		return linesOf(log.String(), `msg="drain `)
	},
}

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

func atoi(_ context.Context, s string) (int, error) { return strconv.Atoi(s) }

func panicOf(f func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return "no panic"
}

// textLogger logs as slog's text handler does, without the time.
func textLogger(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// linesOf returns the lines of log that contain s.
func linesOf(log, s string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var messageRE = regexp.MustCompile("(?m)^\\s*<!-- message: ([a-z-]+) -->\\s*\\n\\s*```text\\n((?:.*\\n)*?)\\s*```")

func TestTroubleshootingQuotesTheCodesMessages(t *testing.T) {
	page, err := os.ReadFile("troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range messageRE.FindAllStringSubmatch(string(page), -1) {
		name := m[1]
		var quoted []string
		for _, l := range strings.Split(strings.TrimRight(m[2], "\n"), "\n") {
			quoted = append(quoted, strings.TrimSpace(l))
		}
		seen[name] = true
		produce, ok := messages[name]
		if !ok {
			t.Errorf("troubleshooting.md quotes message %q, which this test does not make", name)
			continue
		}
		got := produce(t)
		if name == "drain" {
			// The two lines come from two goroutines: with DrainGrace(0)
			// the grace may be over before "drain begun" is written.
			got = sortedLines(got)
			slices.Sort(quoted)
		}
		if want := strings.Join(quoted, "\n"); got != want {
			t.Errorf("message %q: the code prints\n%s\nthe page quotes\n%s", name, got, want)
		}
	}
	for name := range messages {
		if !seen[name] {
			t.Errorf("troubleshooting.md does not quote message %q", name)
		}
	}
}
