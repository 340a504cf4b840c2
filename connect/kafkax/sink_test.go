package kafkax_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/kafkax"
	"github.com/twmb/franz-go/pkg/kerr"
)

// oversized is a value larger than the producer's largest batch: the
// producer gives up on its record at once, and on it alone.
var oversized = make([]byte, 2<<20)

func TestAWriteThatStoresSomeRecordsNamesOnlyTheOthers(t *testing.T) {
	out := newTopic(t, 2)
	sink := newSink(t, kafkax.ToTopic(out))
	recs := make([]kafkax.Out, 10)
	for i := range recs {
		recs[i] = kafkax.Out{Value: []byte(strconv.Itoa(i))}
	}
	recs[3].Value, recs[7].Value = oversized, oversized
	err := sink.Write(ctxT(t, 30*time.Second), recs)
	var ie sluice.ItemErrors
	if !errors.As(err, &ie) || len(ie) != 10 || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("got %v; want ItemErrors for the 10 records, wrapping kerr.MessageTooLarge", err)
	}
	for i, e := range ie {
		if (e != nil) != (i == 3 || i == 7) {
			t.Errorf("record %d: error %v; want one only for records 3 and 7", i, e)
		}
	}
	ids, _ := readAll(t, out)
	if len(ids) != 8 || ids["3"] != 0 || ids["9"] != 1 {
		t.Fatalf("topic holds %v; want the 8 records that fit, once each", ids)
	}
	if st := sink.Stats(); st.Produced != 8 || st.Failed != 2 {
		t.Fatalf("stats %+v; want 8 produced, 2 failed", st)
	}
	all := []kafkax.Out{{Value: oversized}, {Value: oversized}}
	if err := sink.Write(ctxT(t, 30*time.Second), all); errors.As(err, &ie) || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("got %v; want a plain error when no record was stored", err)
	}
}

func TestProduceRetriesAndDeadLettersOnlyTheRecordsNotStored(t *testing.T) {
	out := newTopic(t, 2)
	sink := newSink(t, kafkax.ToTopic(out))
	const n = 2000
	recs := make([]kafkax.Out, n)
	for i := range recs {
		recs[i] = kafkax.Out{Value: []byte(strconv.Itoa(i))}
	}
	bad := []int{5, 999, 1500}
	for _, i := range bad {
		recs[i].Key, recs[i].Value = recs[i].Value, oversized
	}
	p := sluice.New(ctxT(t, time.Minute))
	var dead sluice.Stream[sluice.Failed[kafkax.Out]]
	kafkax.Produce(p, "write", sluice.FromSlice(p, "recs", recs), sink,
		sluice.Retry(2, time.Millisecond, time.Millisecond), sluice.DeadLetter(&dead))
	var got []int
	sluice.ForEach(p, "dead", dead, 1, func(_ context.Context, f sluice.Failed[kafkax.Out]) error {
		if f.Attempts != 2 || !errors.Is(f.Err, kerr.MessageTooLarge) {
			t.Errorf("dead letter after %d attempts: %v; want 2, record too large", f.Attempts, f.Err)
		}
		i, err := strconv.Atoi(string(f.Item.Key))
		if err != nil {
			t.Errorf("dead letter with key %q", f.Item.Key)
		}
		got = append(got, i)
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, bad) {
		t.Fatalf("dead letters %v; want %v", got, bad)
	}
	ids, _ := readAll(t, out)
	ids["5"], ids["999"], ids["1500"] = 1, 1, 1
	if dup := checkEvery(t, ids, n); dup != 0 {
		t.Fatalf("%d records stored twice; want none: a retry writes only the records not stored", dup)
	}
}
