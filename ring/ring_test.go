package ring

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/sluicehq/sluice/internal/seeds"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// queue is the method set the three kinds share; the tests run against it.
type queue[T any] interface {
	TryPush(T) error
	TryPop() (T, error)
	TryPushMany([]T) (int, error)
	TryPopMany([]T) (int, error)
	Push(context.Context, T) error
	Pop(context.Context) (T, error)
	PushMany(context.Context, []T) (int, error)
	PopMany(context.Context, []T) (int, error)
	Close()
	Len() int
	Cap() int
}

var (
	_ queue[int] = (*SPSC[int])(nil)
	_ queue[int] = (*MPSC[int])(nil)
	_ queue[int] = (*MPMC[int])(nil)
)

type kind struct {
	name string
	new  func(capacity int) queue[int]
}

var kinds = []kind{
	{"SPSC", func(c int) queue[int] { return NewSPSC[int](c) }},
	{"MPSC", func(c int) queue[int] { return NewMPSC[int](c) }},
	{"MPMC", func(c int) queue[int] { return NewMPMC[int](c) }},
}

func forEachKind(t *testing.T, f func(t *testing.T, k kind)) {
	t.Helper()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got error %v, want %v", what, got, want)
	}
}

func TestNewPanicsNamingRingAndCapacity(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		for _, c := range []int{-4, 0, 1, 3, 1000} {
			func() {
				defer func() {
					t.Helper()
					r := recover()
					msg, _ := r.(string)
					want := fmt.Sprintf("got %d", c)
					if !strings.HasPrefix(msg, "ring: ") || !strings.HasSuffix(msg, want) {
						t.Errorf("capacity %d: got panic %q, want a message starting %q and ending %q", c, r, "ring: ", want)
					}
				}()
				k.new(c)
			}()
		}
	})
}

func TestCapIsTheCapacityAndLenCountsItems(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		q := k.new(8)
		if got := q.Cap(); got != 8 {
			t.Fatalf("Cap: got %d, want 8", got)
		}
		for i := range 5 {
			wantErr(t, "TryPush", q.TryPush(i), nil)
		}
		if got := q.Len(); got != 5 {
			t.Fatalf("Len after 5 pushes: got %d, want 5", got)
		}
		if _, err := q.TryPop(); err != nil {
			t.Fatal(err)
		}
		if got := q.Len(); got != 4 {
			t.Fatalf("Len after a pop: got %d, want 4", got)
		}
	})
}

func TestTryOpsReportFullAndEmpty(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		q := k.new(2)
		_, err := q.TryPop()
		wantErr(t, "TryPop on empty", err, ErrEmpty)
		if n, err := q.TryPushMany([]int{1, 2, 3}); n != 2 || err != nil {
			t.Fatalf("TryPushMany of 3 into capacity 2: got %d, %v, want 2, nil", n, err)
		}
		wantErr(t, "TryPush on full", q.TryPush(4), ErrFull)
		if n, err := q.TryPushMany([]int{4}); n != 0 || err != nil {
			t.Fatalf("TryPushMany on full: got %d, %v, want 0, nil", n, err)
		}
		dst := make([]int, 4)
		if n, err := q.TryPopMany(dst); n != 2 || err != nil || dst[0] != 1 || dst[1] != 2 {
			t.Fatalf("TryPopMany: got %d, %v, %v, want 2, nil, [1 2 ...]", n, err, dst)
		}
		if n, err := q.TryPopMany(dst); n != 0 || err != nil {
			t.Fatalf("TryPopMany on empty: got %d, %v, want 0, nil", n, err)
		}
	})
}

func TestCloseDrainsThenReturnsErrClosed(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx := context.Background()
		q := k.new(4)
		if n, err := q.PushMany(ctx, []int{1, 2, 3}); n != 3 || err != nil {
			t.Fatalf("PushMany: got %d, %v, want 3, nil", n, err)
		}
		q.Close()
		q.Close() // idempotent
		wantErr(t, "Push after Close", q.Push(ctx, 4), ErrClosed)
		wantErr(t, "TryPush after Close", q.TryPush(4), ErrClosed)
		if n, err := q.PushMany(ctx, []int{4}); n != 0 || err != ErrClosed {
			t.Fatalf("PushMany after Close: got %d, %v, want 0, ErrClosed", n, err)
		}
		if v, err := q.Pop(ctx); v != 1 || err != nil {
			t.Fatalf("Pop after Close: got %d, %v, want 1, nil", v, err)
		}
		dst := make([]int, 4)
		if n, err := q.PopMany(ctx, dst); n != 2 || err != nil {
			t.Fatalf("PopMany after Close: got %d, %v, want 2, nil", n, err)
		}
		_, err := q.Pop(ctx)
		wantErr(t, "Pop on closed, drained queue", err, ErrClosed)
		_, err = q.TryPop()
		wantErr(t, "TryPop on closed, drained queue", err, ErrClosed)
		n, err := q.PopMany(ctx, dst)
		wantErr(t, "PopMany on closed, drained queue", err, ErrClosed)
		if n != 0 {
			t.Fatalf("PopMany on closed, drained queue: got n=%d, want 0", n)
		}
	})
}

func TestReadyOpsSucceedEvenWithContextDone(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		q := k.new(2)
		wantErr(t, "Push with room", q.Push(ctx, 7), nil)
		if v, err := q.Pop(ctx); v != 7 || err != nil {
			t.Fatalf("Pop with an item: got %d, %v, want 7, nil", v, err)
		}
		_, err := q.Pop(ctx)
		wantErr(t, "Pop on empty with ctx done", err, context.Canceled)
		if n, err := q.PushMany(ctx, []int{1, 2, 3}); n != 2 || err != context.Canceled {
			t.Fatalf("PushMany of 3 into capacity 2 with ctx done: got %d, %v, want 2, context.Canceled", n, err)
		}
	})
}

// TestBlockedCallsWakeOnTheOtherSide parks a consumer on an empty queue and a
// producer on a full one, and checks that each is woken by the other side.
// synctest.Wait returns only once the goroutine is durably blocked, so this
// also shows that waiting ends in a real park, not a spin.
func TestBlockedCallsWakeOnTheOtherSide(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			q := k.new(2)
			got := make(chan int)
			go func() {
				v, err := q.Pop(ctx)
				if err != nil {
					t.Errorf("Pop: %v", err)
				}
				got <- v
			}()
			synctest.Wait()
			wantErr(t, "Push", q.Push(ctx, 42), nil)
			if v := <-got; v != 42 {
				t.Fatalf("blocked Pop: got %d, want 42", v)
			}

			if n, err := q.PushMany(ctx, []int{1, 2}); n != 2 || err != nil {
				t.Fatalf("PushMany: got %d, %v, want 2, nil", n, err)
			}
			pushed := make(chan error)
			go func() { pushed <- q.Push(ctx, 3) }()
			synctest.Wait()
			select {
			case err := <-pushed:
				t.Fatalf("Push on a full queue returned %v before any pop", err)
			default:
			}
			dst := make([]int, 3)
			if n, err := q.PopMany(ctx, dst); n != 2 || err != nil {
				t.Fatalf("PopMany: got %d, %v, want 2, nil", n, err)
			}
			wantErr(t, "blocked Push", <-pushed, nil)
			if v, err := q.Pop(ctx); v != 3 || err != nil {
				t.Fatalf("Pop: got %d, %v, want 3, nil", v, err)
			}
		})
	})
}

func TestBlockedPopReturnsContextErrorAtDeadline(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		synctest.Test(t, func(t *testing.T) {
			q := k.new(4)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := q.Pop(ctx)
			wantErr(t, "Pop", err, context.DeadlineExceeded)
			if got := time.Since(start); got != time.Second {
				t.Fatalf("Pop returned after %v, want 1s", got)
			}
			n, err := q.PopMany(ctx, make([]int, 2))
			wantErr(t, "PopMany", err, context.DeadlineExceeded)
			if n != 0 {
				t.Fatalf("PopMany: got n=%d, want 0", n)
			}
			// The waiter must have un-counted itself, or every later push
			// would take the slow path.
			if n := parked(q); n != 0 {
				t.Fatalf("after the deadline: got %d goroutines counted as parked, want 0", n)
			}
		})
	})
}

// A PushMany larger than the queue appends what fits, waits for room and
// goes on where it stopped; at the deadline it returns ctx's error and the
// count of what it appended, and those items are in the queue. A blocked
// Push returns ctx's error and appends nothing.
func TestBlockedPushManyGoesOnWhereItStoppedAndCountsWhatItAppended(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		synctest.Test(t, func(t *testing.T) {
			q := k.new(2)
			ctx := context.Background()
			popped := make(chan []int)
			go func() {
				var got []int
				for range 5 {
					v, err := q.Pop(ctx)
					if err != nil {
						t.Errorf("Pop: %v", err)
					}
					got = append(got, v)
				}
				popped <- got
			}()
			if n, err := q.PushMany(ctx, []int{1, 2, 3, 4, 5}); n != 5 || err != nil {
				t.Fatalf("PushMany of 5 into 2 slots with a consumer: got %d, %v, want 5, nil", n, err)
			}
			if got := <-popped; !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
				t.Fatalf("popped %v, want [1 2 3 4 5]", got)
			}

			dctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			n, err := q.PushMany(dctx, []int{6, 7, 8})
			wantErr(t, "PushMany at the deadline", err, context.DeadlineExceeded)
			if n != 2 || q.Len() != 2 {
				t.Fatalf("PushMany at the deadline: got n=%d and Len %d, want 2 and 2", n, q.Len())
			}
			wantErr(t, "Push at the deadline", q.Push(dctx, 9), context.DeadlineExceeded)
			for _, want := range []int{6, 7} {
				if v, err := q.TryPop(); v != want || err != nil {
					t.Fatalf("TryPop: got %d, %v, want %d, nil", v, err, want)
				}
			}
			if n := parked(q); n != 0 {
				t.Fatalf("after the deadline: got %d goroutines counted as parked, want 0", n)
			}
		})
	})
}

func TestCloseWakesBlockedPushersAndPoppers(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			empty, full := k.new(2), k.new(2)
			full.PushMany(ctx, []int{1, 2})
			errs := make(chan error, 2)
			go func() { _, err := empty.Pop(ctx); errs <- err }()
			go func() { errs <- full.Push(ctx, 3) }()
			synctest.Wait()
			empty.Close()
			full.Close()
			wantErr(t, "blocked call after Close", <-errs, ErrClosed)
			wantErr(t, "blocked call after Close", <-errs, ErrClosed)
		})
	})
}

// TestPoppedItemsAreNotRetained checks that a pop zeroes its slots, so that
// a queue does not keep popped items alive.
func TestPoppedItemsAreNotRetained(t *testing.T) {
	type big struct{ b [1 << 10]byte }
	queues := map[string]queue[*big]{
		"SPSC": NewSPSC[*big](4),
		"MPSC": NewMPSC[*big](4),
		"MPMC": NewMPMC[*big](4),
	}
	for name, q := range queues {
		t.Run(name, func(t *testing.T) {
			var ws []weak.Pointer[big]
			for range 3 {
				p := new(big)
				ws = append(ws, weak.Make(p))
				if err := q.TryPush(p); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := q.TryPop(); err != nil {
				t.Fatal(err)
			}
			if n, err := q.TryPopMany(make([]*big, 4)); n != 2 || err != nil {
				t.Fatalf("TryPopMany: got %d, %v, want 2, nil", n, err)
			}
			runtime.GC()
			runtime.GC()
			for i, w := range ws {
				if w.Value() != nil {
					t.Errorf("item %d: still reachable after being popped and dropped", i)
				}
			}
			runtime.KeepAlive(q)
		})
	}
}

// parked returns how many goroutines wait on either side of q.
func parked(q queue[int]) int32 {
	notEmpty, notFull := q.(tryQueue[int]).waiters()
	return notEmpty.parked.Load() + notFull.parked.Load()
}

func TestFastPathsDoNotAllocate(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx := context.Background()
		q := k.new(64)
		xs, dst := make([]int, 16), make([]int, 16)
		allocs := testing.AllocsPerRun(100, func() {
			q.Push(ctx, 1)
			q.Pop(ctx)
			q.TryPush(1)
			q.TryPop()
			q.PushMany(ctx, xs)
			q.PopMany(ctx, dst)
		})
		if allocs != 0 {
			t.Fatalf("allocations per round of pushes and pops: got %v, want 0", allocs)
		}
	})
}

// TestSeedRingDeliversInOrder checks the seed-004 baseline that the
// benchmarks compare against, so that a benchmark never measures a broken
// baseline.
func TestSeedRingDeliversInOrder(t *testing.T) {
	r := seeds.NewRingBuffer[int](16)
	const n = 10_000
	go func() {
		for i := range n {
			r.Write(i)
		}
	}()
	for i := range n {
		if got := r.Read(); got != i {
			t.Fatalf("item %d: got %d, want %d", i, got, i)
		}
	}
	if _, ok := r.TryRead(); ok {
		t.Fatal("TryRead on a drained seed ring: got an item, want none")
	}
}
