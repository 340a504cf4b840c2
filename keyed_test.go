package sluice_test

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// kv is a keyed test item; a negative key marks a control item.
type kv struct{ k, v int }

// out is what the reference and the stage emit: per key, in order.
type kout struct {
	k   int
	s   string
	seq int
}

// keyedRef is the one-goroutine reference: a running sum per key, every
// item emitting the sum so far, every control item emitting each key's
// sum, and the end emitting each key's final sum.
func keyedRef(in []kv) map[int][]string {
	sums := map[int]int{}
	got := map[int][]string{}
	for _, x := range in {
		if x.k < 0 {
			for k, s := range sums {
				got[k] = append(got[k], fmt.Sprintf("ctl%d:%d", x.v, s))
			}
			continue
		}
		sums[x.k] += x.v
		got[x.k] = append(got[x.k], fmt.Sprint(sums[x.k]))
	}
	for k, s := range sums {
		got[k] = append(got[k], fmt.Sprintf("end:%d", s))
	}
	return got
}

func keyedFuncs() sluice.KeyFuncs[kv, int, int, kout] {
	return sluice.KeyFuncs[kv, int, int, kout]{
		Key: func(x kv) int { return x.k },
		Item: func(_ context.Context, k int, s *int, x kv, emit func(kout) bool) error {
			*s += x.v
			emit(kout{k: k, s: fmt.Sprint(*s)})
			return nil
		},
		End: func(_ context.Context, k int, s *int, why sluice.KeyEnd, emit func(kout) bool) error {
			if why != sluice.KeyFlushed {
				return fmt.Errorf("key %d: %v, want flushed", k, why)
			}
			emit(kout{k: k, s: fmt.Sprintf("end:%d", *s)})
			return nil
		},
		IsControl: func(x kv) bool { return x.k < 0 },
		Control: func(_ context.Context, x kv, keys iter.Seq2[int, *int], emit func(kout) bool) error {
			for k, s := range keys {
				emit(kout{k: k, s: fmt.Sprintf("ctl%d:%d", x.v, *s)})
			}
			return nil
		},
	}
}

func TestKeyedMatchesOneGoroutineReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for n := 1; n <= 8; n++ {
		in := make([]kv, 3000+rng.IntN(3000))
		for i := range in {
			in[i] = kv{rng.IntN(50), rng.IntN(100)}
			if rng.IntN(200) == 0 {
				in[i] = kv{-1, i}
			}
		}
		want := keyedRef(in)
		p := sluice.New(context.Background())
		out := sluice.Keyed(p, "sum", sluice.FromSlice(p, "in", in), n, keyedFuncs())
		res := sluice.Collect(p, "collect", out)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		got := map[int][]string{}
		for _, o := range res.Value() {
			got[o.k] = append(got[o.k], o.s)
		}
		if len(got) != len(want) {
			t.Fatalf("n=%d: %d keys, want %d", n, len(got), len(want))
		}
		for k, w := range want {
			if !slices.Equal(got[k], w) {
				t.Fatalf("n=%d: key %d: got %v, want %v", n, k, head2(got[k]), head2(w))
			}
		}
		if st := statsOf(p, "sum"); st.Keys != 0 || st.In != int64(len(in)) {
			t.Fatalf("n=%d: after the end Keys = %d, In = %d; want 0, %d", n, st.Keys, st.In, len(in))
		}
	}
}

func head2(xs []string) []string { return xs[:min(len(xs), 8)] }

func statsOf(p *sluice.Pipeline, name string) sluice.StageStats {
	for _, st := range p.Stats().Stages {
		if st.Name == name {
			return st
		}
	}
	return sluice.StageStats{}
}

// TestKeyedEvictsIdleKeys: a key silent for the TTL is evicted, its End
// sees KeyEvicted and may emit; Stats count the keys held.
func TestKeyedEvictsIdleKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(context.Background())
		src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[kv]) error {
			e.Send(kv{1, 1})
			e.Send(kv{2, 1})
			e.Flush()
			time.Sleep(30 * time.Second) // both idle past the TTL
			e.Send(kv{2, 5})
			e.Flush()
			time.Sleep(time.Second)
			if k := statsOf(p, "k").Keys; k != 1 {
				return fmt.Errorf("keys held = %d, want 1", k)
			}
			return nil
		})
		fn := sluice.KeyFuncs[kv, int, int, string]{
			Key: func(x kv) int { return x.k },
			Item: func(_ context.Context, k int, s *int, x kv, emit func(string) bool) error {
				*s += x.v
				return nil
			},
			End: func(_ context.Context, k int, s *int, why sluice.KeyEnd, emit func(string) bool) error {
				emit(fmt.Sprintf("%d:%d:%v", k, *s, why))
				return nil
			},
			TTL: 10 * time.Second,
		}
		res := sluice.Collect(p, "c", sluice.Keyed(p, "k", src, 2, fn))
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		got := res.Value()
		slices.Sort(got)
		want := []string{"1:1:evicted", "2:1:evicted", "2:5:flushed"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// TestKeyedSettlesLikeFlatMap: an item is acknowledged once its results
// are stored; a control item once every worker handled it and every copy
// it emitted is stored.
func TestKeyedSettlesLikeFlatMap(t *testing.T) {
	const n = 4
	var mu sync.Mutex
	stored := map[uint64]int{}
	var acked atomic.Int64
	var bad []string
	want := func(id uint64) int {
		switch {
		case id%100 == 0:
			return n // a control item: one copy per worker
		case id%2 == 0:
			return 1
		}
		return 0
	}
	s := settleFunc(func(id uint64, err error) {
		mu.Lock()
		defer mu.Unlock()
		acked.Add(1)
		if err != nil || stored[id] != want(id) {
			bad = append(bad, fmt.Sprintf("message %d settled (%v) with %d of %d copies stored", id, err, stored[id], want(id)))
		}
	})
	type rm struct {
		sluice.Receipt
		kv
		id uint64
	}
	in := make([]rm, 1000)
	for i := range in {
		in[i] = rm{sluice.NewReceipt(s, uint64(i)), kv{i % 7, i}, uint64(i)}
		if i%100 == 0 {
			in[i].k = -1
		}
	}
	p := sluice.New(context.Background())
	fn := sluice.KeyFuncs[rm, int, int, rm]{
		Key: func(x rm) int { return x.k },
		Item: func(_ context.Context, k int, s *int, x rm, emit func(rm) bool) error {
			if x.v%2 == 0 {
				emit(x)
			}
			return nil
		},
		IsControl: func(x rm) bool { return x.k < 0 },
		Control: func(_ context.Context, x rm, _ iter.Seq2[int, *int], emit func(rm) bool) error {
			emit(x)
			return nil
		},
	}
	sluice.ForEach(p, "store", sluice.Keyed(p, "k", sluice.FromSlice(p, "in", in), n, fn), 2, func(_ context.Context, x rm) error {
		mu.Lock()
		stored[x.id]++
		mu.Unlock()
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if a := acked.Load(); a != int64(len(in)) || len(bad) > 0 {
		t.Fatalf("acknowledged %d, want %d; %d bad: %v", a, len(in), len(bad), bad[:min(3, len(bad))])
	}
}

type settleFunc func(uint64, error)

func (f settleFunc) Settle(k uint64, c error) { f(k, c) }

func TestKeyedMisuse(t *testing.T) {
	noKey := keyedFuncs()
	noKey.Key = nil
	noCtl := keyedFuncs()
	noCtl.Control = nil
	cases := []struct {
		name  string
		n     int
		fn    sluice.KeyFuncs[kv, int, int, kout]
		parts []string
	}{
		{"nil key", 1, noKey, []string{`Keyed "k"`, "nil Key"}},
		{"zero workers", 0, keyedFuncs(), []string{`Keyed "k"`, "workers must be ≥ 1, got 0"}},
		{"control without Control", 2, noCtl, []string{`Keyed "k"`, "Control is nil"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sluice.New(context.Background())
			mustPanic(t, func() { sluice.Keyed(p, "k", sluice.FromSlice(p, "s", []kv{}), tc.n, tc.fn) }, tc.parts...)
			cancelAndDrain(p)
		})
	}
}
