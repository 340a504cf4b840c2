package dash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func eventText(e Event) string {
	var sb strings.Builder
	sb.WriteString(e.Level + " " + e.Message)
	for _, a := range e.Attrs {
		fmt.Fprintf(&sb, " %s=%s", a.Key, a.Value)
	}
	return sb.String()
}

func TestEventsKeepsTheLastNRecordsAndPassesEveryOneOn(t *testing.T) {
	var out bytes.Buffer
	events := Events(3, slog.NewJSONHandler(&out, nil))
	log := slog.New(events)
	for i := range 5 {
		log.Info("tick", "i", i)
	}
	last := events.Last()
	var got []string
	for _, e := range last {
		got = append(got, fmt.Sprintf("%d:%s", e.Seq, eventText(e)))
	}
	if want := "3:INFO tick i=2 4:INFO tick i=3 5:INFO tick i=4"; strings.Join(got, " ") != want {
		t.Fatalf("got kept %q, want %q", strings.Join(got, " "), want)
	}
	lines := 0
	for sc := bufio.NewScanner(&out); sc.Scan(); lines++ {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec["msg"] != "tick" || rec["i"] != float64(lines) {
			t.Fatalf("line %d of the wrapped handler: got %q (%v), want tick with i=%d", lines, sc.Text(), err, lines)
		}
	}
	if lines != 5 {
		t.Fatalf("got %d lines from the wrapped handler, want 5", lines)
	}
}

func TestEventsFlattensAttributesAndGroupsLikeTheLog(t *testing.T) {
	var out bytes.Buffer
	events := Events(10, slog.NewTextHandler(&out, nil))
	log := slog.New(events).With("pipeline", "market").WithGroup("kafka")
	log.Warn("partitions lost", "topic", "t", slog.Group("at", "partition", 3, "offset", int64(42)),
		slog.Group("empty"), "err", errors.New("boom"))
	last := events.Last()
	if len(last) != 1 {
		t.Fatalf("got %d records kept, want 1", len(last))
	}
	want := "WARN partitions lost pipeline=market kafka.topic=t kafka.at.partition=3 kafka.at.offset=42 kafka.err=boom"
	if got := eventText(last[0]); got != want {
		t.Fatalf("got kept %q, want %q", got, want)
	}
	// The wrapped handler saw the same record, with the same groups.
	if line := out.String(); !strings.Contains(line, "pipeline=market kafka.topic=t kafka.at.partition=3 kafka.at.offset=42") {
		t.Fatalf("got the wrapped handler's line %q, want the same attributes", line)
	}
	if time.Since(last[0].Time) > time.Minute {
		t.Fatalf("got time %v, want the record's", last[0].Time)
	}
}

func TestEventsKeepsWhatTheWrappedHandlerEnables(t *testing.T) {
	var out bytes.Buffer
	events := Events(10, slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log := slog.New(events)
	log.Info("not kept")
	log.Debug("not kept either")
	log.Error("kept")
	if last := events.Last(); len(last) != 1 || last[0].Message != "kept" || last[0].Level != "ERROR" {
		t.Fatalf("got %+v, want only the error record", last)
	}
	// Without a wrapped handler: Info and above, passed nowhere.
	alone := Events(10, nil)
	slog.New(alone).Debug("dropped")
	slog.New(alone).Info("kept")
	if last := alone.Last(); len(last) != 1 || last[0].Message != "kept" {
		t.Fatalf("got %+v from a log without a wrapped handler, want the Info record only", last)
	}
}

func TestEventsPanicsOnAnEmptyLog(t *testing.T) {
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "dash: Events") || !strings.Contains(r, "got 0") {
			t.Fatalf("got panic %q, want one naming dash: Events and 0", r)
		}
	}()
	Events(0, nil)
}

func TestEventsIsSafeForConcurrentLogging(t *testing.T) {
	events := Events(64, slog.NewTextHandler(ioDiscard{}, nil))
	log := slog.New(events)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			l := log.With("g", g)
			for i := range 500 {
				l.Info("tick", "i", i)
				if i%50 == 0 {
					events.Last()
				}
			}
		})
	}
	wg.Wait()
	last := events.Last()
	if len(last) != 64 || last[63].Seq != 8*500 {
		t.Fatalf("got %d records, the newest numbered %d; want 64, the newest %d", len(last), last[len(last)-1].Seq, 8*500)
	}
	for i := 1; i < len(last); i++ {
		if last[i].Seq != last[i-1].Seq+1 {
			t.Fatalf("got records %d then %d, want consecutive numbers oldest first", last[i-1].Seq, last[i].Seq)
		}
	}
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

func TestBoardServesAPipelinesLogAsItsEvents(t *testing.T) {
	events := Events(100, nil)
	// A pipeline whose stage fails on every item: its logger writes one
	// "items failed" line, not one per item.
	p := sluice.New(context.Background(), sluice.Named("failing"), sluice.Logger(slog.New(events)))
	src := sluice.FromSlice(p, "numbers", make([]int, 1000))
	sluice.ForEach(p, "reject", src, 2, func(context.Context, int) error { return errors.New("rejected") },
		sluice.SkipErrors())
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	board := Handler(p)
	srv, c := serve(t, board)
	_, body := get(t, c, srv.URL+"/snapshot.json")
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("got invalid JSON %q: %v", body, err)
	}
	if _, ok := raw["events"]; ok {
		t.Fatalf("got events in the snapshot of a board that shows none: %s", body)
	}

	board.ShowEvents(events)
	_, body = get(t, c, srv.URL+"/snapshot.json")
	var v View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("got invalid JSON %q: %v", body, err)
	}
	var texts []string
	failed := 0
	for _, e := range v.Events {
		texts = append(texts, eventText(e))
		if e.Message == "items failed" {
			failed++
		}
	}
	all := strings.Join(texts, "\n")
	if failed < 1 || failed > 2 || !strings.Contains(all, "WARN items failed pipeline=failing stage=reject") ||
		!strings.Contains(all, "INFO pipeline finished pipeline=failing") {
		t.Fatalf("got events\n%s\nwant one or two \"items failed\" lines for stage reject and the pipeline's end", all)
	}
	var rawEvents struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal([]byte(body), &rawEvents); err != nil || len(rawEvents.Events) == 0 {
		t.Fatalf("got %q (%v), want events", body, err)
	}
	checkKeys(t, "event", rawEvents.Events[0], "seq", "time", "level", "message", "attrs")

	board.ShowEvents(nil)
	if v := board.View(); v.Events != nil {
		t.Fatalf("got %d events after ShowEvents(nil), want none", len(v.Events))
	}
}
