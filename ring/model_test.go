package ring

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// model is the reference queue: a mutex and a slice, with the semantics the
// package documents. The fuzz targets feed it and a ring queue the same
// operations, one at a time, and require the same answers.
type model struct {
	mu     sync.Mutex
	items  []int
	cap    int
	closed bool
}

func (m *model) pushMany(xs []int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	n := min(len(xs), m.cap-len(m.items))
	m.items = append(m.items, xs[:n]...)
	return n, nil
}

func (m *model) popMany(k int) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.items) == 0 && m.closed {
		return nil, ErrClosed
	}
	n := min(k, len(m.items))
	out := slices.Clone(m.items[:n])
	m.items = m.items[n:]
	return out, nil
}

func (m *model) close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// The blocking forms are run with a context that is already cancelled, which
// makes them deterministic: they do what the Try form would and return
// context.Canceled where they would otherwise wait.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// runModel decodes ops as a capacity byte followed by (op, arg) pairs, runs
// them on q and on the model, and fails at the first difference.
func runModel(t *testing.T, newQueue func(int) queue[int], ops []byte) {
	t.Helper()
	if len(ops) == 0 {
		return
	}
	capacity := 2 << (ops[0] % 5) // 2 … 32
	q, m := newQueue(capacity), &model{cap: capacity}
	next := 0 // every pushed value is distinct, so any reordering shows
	values := func(k int) []int {
		xs := make([]int, k)
		for i := range xs {
			xs[i] = next + i
		}
		return xs
	}
	check := func(step int, what string, gotN, wantN int, got, want error, gotItems, wantItems []int) {
		t.Helper()
		if gotN != wantN || !errors.Is(got, want) || !slices.Equal(gotItems, wantItems) {
			t.Fatalf("step %d %s: got n=%d err=%v items=%v, want n=%d err=%v items=%v",
				step, what, gotN, got, gotItems, wantN, want, wantItems)
		}
	}
	for i := 1; i+1 < len(ops); i += 2 {
		op, k := ops[i], int(ops[i+1])%(capacity+3)
		step := i / 2
		switch {
		case op == 0xff:
			q.Close()
			m.close()
		case op%8 == 0: // TryPush
			wn, werr := m.pushMany(values(1))
			if wn == 0 && werr == nil {
				werr = ErrFull
			}
			err := q.TryPush(next)
			check(step, "TryPush", 0, 0, err, werr, nil, nil)
			next += wn
		case op%8 == 1: // TryPushMany
			xs := values(k)
			wn, werr := m.pushMany(xs)
			n, err := q.TryPushMany(xs)
			check(step, "TryPushMany", n, wn, err, werr, nil, nil)
			next += wn
		case op%8 == 2: // Push
			wn, werr := m.pushMany(values(1))
			if wn == 0 && werr == nil {
				werr = context.Canceled
			}
			err := q.Push(cancelled, next)
			check(step, "Push", 0, 0, err, werr, nil, nil)
			next += wn
		case op%8 == 3: // PushMany
			xs := values(k)
			wn, werr := m.pushMany(xs)
			if wn < k && werr == nil {
				werr = context.Canceled
			}
			n, err := q.PushMany(cancelled, xs)
			check(step, "PushMany", n, wn, err, werr, nil, nil)
			next += wn
		case op%8 == 4: // TryPop
			want, werr := m.popMany(1)
			if len(want) == 0 && werr == nil {
				werr = ErrEmpty
			}
			v, err := q.TryPop()
			var got []int
			if err == nil {
				got = []int{v}
			}
			check(step, "TryPop", 0, 0, err, werr, got, want)
		case op%8 == 5: // TryPopMany
			want, werr := m.popMany(k)
			dst := make([]int, k)
			n, err := q.TryPopMany(dst)
			check(step, "TryPopMany", n, len(want), err, werr, dst[:n], want)
		case op%8 == 6: // Pop
			want, werr := m.popMany(1)
			if len(want) == 0 && werr == nil {
				werr = context.Canceled
			}
			v, err := q.Pop(cancelled)
			var got []int
			if err == nil {
				got = []int{v}
			}
			check(step, "Pop", 0, 0, err, werr, got, want)
		default: // PopMany
			want, werr := m.popMany(k)
			if len(want) == 0 && werr == nil && k > 0 {
				werr = context.Canceled
			}
			dst := make([]int, k)
			n, err := q.PopMany(cancelled, dst)
			check(step, "PopMany", n, len(want), err, werr, dst[:n], want)
		}
		if got, want := q.Len(), len(m.items); got != want {
			t.Fatalf("step %d: Len got %d, want %d", step, got, want)
		}
	}
}

// seedOps adds a corpus to f: hand-written sequences for the edges (wrap,
// full, close with items left) and pseudo-random ones, so that plain
// `go test` already covers a few thousand operations per kind.
func seedOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 1, 2, 5, 1, 1, 3, 5, 3, 0xff, 0, 4, 0, 5, 9})
	f.Add([]byte{4, 1, 40, 5, 7, 1, 40, 5, 40, 0, 0, 0xff, 0, 6, 0, 7, 3, 7, 0})
	f.Add([]byte{1, 3, 5, 3, 5, 0, 0, 4, 0, 6, 0, 7, 4, 2, 0, 0xff, 0, 7, 0, 5, 0})
	// Capacity 4 filled by runs of 1 and 3, then a pop of more than the
	// capacity: the consumer must not read a lap past the head.
	f.Add([]byte{1, 0, 0, 1, 3, 5, 5, 0, 0, 5, 6, 5, 6})
	r := rand.New(rand.NewPCG(1, 2))
	for range 24 {
		ops := make([]byte, 1+2*200)
		for i := range ops {
			ops[i] = byte(r.UintN(256))
		}
		// Close near the end only, so most of the sequence runs open.
		for i := 1; i < len(ops); i += 2 {
			if ops[i] == 0xff && i < len(ops)-20 {
				ops[i] = 0
			}
		}
		f.Add(ops)
	}
}

func FuzzSPSCMatchesModel(f *testing.F) {
	seedOps(f)
	f.Fuzz(func(t *testing.T, ops []byte) { runModel(t, kinds[0].new, ops) })
}

func FuzzMPSCMatchesModel(f *testing.F) {
	seedOps(f)
	f.Fuzz(func(t *testing.T, ops []byte) { runModel(t, kinds[1].new, ops) })
}

func FuzzMPMCMatchesModel(f *testing.F) {
	seedOps(f)
	f.Fuzz(func(t *testing.T, ops []byte) { runModel(t, kinds[2].new, ops) })
}
