package sluice_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// limitedService serves limit calls at once, each taking 5–50 ms, and
// answers the rest at once with errBusy (a 503). Made in a synctest
// bubble, its sleeps let the bubble's time pass.
type limitedService struct {
	limit    int64
	inflight atomic.Int64
	mu       sync.Mutex
	rng      *rand.Rand
}

func newLimitedService(limit int, seed uint64) *limitedService {
	return &limitedService{limit: int64(limit), rng: rand.New(rand.NewPCG(seed, 35))}
}

func (s *limitedService) call(_ context.Context, v int) (int, error) {
	if s.inflight.Add(1) > s.limit {
		s.inflight.Add(-1)
		return 0, errBusy
	}
	s.mu.Lock()
	took := 5*time.Millisecond + time.Duration(s.rng.Int64N(int64(45*time.Millisecond)))
	s.mu.Unlock()
	time.Sleep(took)
	s.inflight.Add(-1)
	return v, nil
}

// A probe above what a service serves must not cost an item its
// retries: with the docs' Retry (5 attempts, 10 ms to 1 s), a Map with
// Auto against a service of 32 that answers 503 past that finishes as a
// fixed 32 does, from 32 and from 4 workers, and retries little.
func TestAutoProbesCostNoItemItsRetries(t *testing.T) {
	for _, start := range []int{32, 4} {
		for seed := range 5 {
			t.Run(fmt.Sprintf("from %d seed %d", start, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					svc := newLimitedService(32, uint64(seed))
					p := sluice.New(t.Context())
					m := sluice.Map(p, "fetch", sluice.FromSlice(p, "ids", ints(3000)), start, svc.call,
						sluice.Auto(1, 64), sluice.Retry(5, 10*time.Millisecond, time.Second))
					n := sluice.Reduce(p, "count", m, 0, func(acc, _ int) int { return acc + 1 })
					err := p.Wait()
					st := workersOf(p, "fetch")
					t.Logf("%d retries in 3000 calls; auto %+v", st.Retries, st.Auto)
					if err != nil {
						t.Fatalf("Wait: %v; want the run to finish as a fixed 32 does", err)
					}
					if n.Value() != 3000 {
						t.Fatalf("%d items, want 3000", n.Value())
					}
					if st.Retries > 150 {
						t.Errorf("%d retries in 3000 calls, want at most 5 %%", st.Retries)
					}
				})
			})
		}
	}
}
