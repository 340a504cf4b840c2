package chans_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/chans"
)

func TestDropNewestKeepsTheFirstAndCountsTheRest(t *testing.T) {
	d := chans.NewDropNewest[int](3)
	var kept []bool
	for i := range 5 {
		kept = append(kept, d.Send(i))
	}
	if got := fmt.Sprint(kept); got != "[true true true false false]" {
		t.Fatalf("Send results %s, want [true true true false false]", got)
	}
	if d.Dropped() != 2 || d.Len() != 3 || d.Cap() != 3 {
		t.Fatalf("Dropped, Len, Cap = %d, %d, %d; want 2, 3, 3", d.Dropped(), d.Len(), d.Cap())
	}
	d.Close()
	var got []int
	for v := range d.Out() {
		got = append(got, v)
	}
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("Out gave %v, want [0 1 2]", got)
	}
}

func TestDropOldestKeepsTheLatestAndCountsTheRest(t *testing.T) {
	d := chans.NewDropOldest[int](3)
	var kept []bool
	for i := range 5 {
		kept = append(kept, d.Send(i))
	}
	if got := fmt.Sprint(kept); got != "[true true true false false]" {
		t.Fatalf("Send results %s, want [true true true false false]", got)
	}
	if d.Dropped() != 2 || d.Len() != 3 || d.Cap() != 3 {
		t.Fatalf("Dropped, Len, Cap = %d, %d, %d; want 2, 3, 3", d.Dropped(), d.Len(), d.Cap())
	}
	d.Close()
	var got []int
	for {
		v, err := d.Recv(context.Background())
		if errors.Is(err, chans.ErrClosed) {
			break
		}
		got = append(got, v)
	}
	if fmt.Sprint(got) != "[2 3 4]" {
		t.Fatalf("Recv gave %v, want [2 3 4]", got)
	}
}

func TestDropOldestRecvWaitsAndHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := chans.NewDropOldest[string](1)
		go func() {
			time.Sleep(time.Second)
			d.Send("x")
		}()
		if v, err := d.Recv(context.Background()); v != "x" || err != nil {
			t.Fatalf("Recv() = %q, %v; want x, nil", v, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := d.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Recv on empty: err = %v, want DeadlineExceeded", err)
		}
		if _, ok := d.TryRecv(); ok {
			t.Fatalf("TryRecv on empty: ok = true, want false")
		}
		errc := make(chan error)
		go func() {
			_, err := d.Recv(context.Background())
			errc <- err
		}()
		synctest.Wait()
		d.Close()
		if err := <-errc; !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("waiting Recv after Close: err = %v, want ErrClosed", err)
		}
	})
}

func TestOverflowSendAfterClosePanics(t *testing.T) {
	for name, f := range map[string]func(){
		"DropNewest": func() { d := chans.NewDropNewest[int](1); d.Close(); d.Close(); d.Send(1) },
		"DropOldest": func() { d := chans.NewDropOldest[int](1); d.Close(); d.Close(); d.Send(1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				want := fmt.Sprintf("chans: Send on closed %sChan", name)
				if name == "DropOldest" {
					want = "chans: Send on closed DropOldestQueue"
				}
				if got := fmt.Sprint(recover()); got != want {
					t.Fatalf("panic = %q, want %q", got, want)
				}
			}()
			f()
		})
	}
}

func TestOverflowPanicsOnBadCapacity(t *testing.T) {
	for name, f := range map[string]func(){
		"DropNewest": func() { chans.NewDropNewest[int](0) },
		"DropOldest": func() { chans.NewDropOldest[int](-2) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if got := fmt.Sprint(recover()); !strings.HasPrefix(got, "chans: capacity must be ≥ 1, got -") && got != "chans: capacity must be ≥ 1, got 0" {
					t.Fatalf("panic = %q, want chans: capacity must be ≥ 1, got …", got)
				}
			}()
			f()
		})
	}
}

// FuzzOverflow sends and receives on both overflow kinds from one goroutine
// and checks them against the reference model with the same policy.
func FuzzOverflow(f *testing.F) {
	f.Add(uint8(1), []byte{0, 0, 0, 1, 1, 2, 3, 0})
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 1, 3, 2, 0, 0})
	f.Add(uint8(8), []byte{1, 0, 1, 0, 0, 3, 3, 3, 2})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		c := int(capacity%10) + 1
		newest, nref := chans.NewDropNewest[int](c), &refQueue{limit: c, policy: chans.DropNewest}
		oldest, oref := chans.NewDropOldest[int](c), &refQueue{limit: c, policy: chans.DropOldest}
		for i, op := range ops {
			switch op % 4 {
			case 0:
				if got, want := newest.Send(i), nref.push(i); got != want {
					t.Fatalf("DropNewest.Send(%d) = %v, want %v", i, got, want)
				}
				full := len(oref.items) == c
				oref.push(i)
				if got, want := oldest.Send(i), !full; got != want {
					t.Fatalf("DropOldest.Send(%d) = %v, want %v", i, got, want)
				}
			case 1:
				want := nref.popMany(1)
				select {
				case v := <-newest.Out():
					if len(want) == 0 || v != want[0] {
						t.Fatalf("DropNewest received %d, want %v", v, want)
					}
				default:
					if len(want) != 0 {
						t.Fatalf("DropNewest received nothing, want %v", want)
					}
				}
			case 2:
				want := oref.popMany(1)
				v, ok := oldest.TryRecv()
				if ok != (len(want) == 1) || ok && v != want[0] {
					t.Fatalf("DropOldest.TryRecv() = %d, %v; want %v", v, ok, want)
				}
			case 3:
				if newest.Len() != len(nref.items) || newest.Dropped() != nref.dropped {
					t.Fatalf("DropNewest Len, Dropped = %d, %d; want %d, %d", newest.Len(), newest.Dropped(), len(nref.items), nref.dropped)
				}
				if oldest.Len() != len(oref.items) || oldest.Dropped() != oref.dropped {
					t.Fatalf("DropOldest Len, Dropped = %d, %d; want %d, %d", oldest.Len(), oldest.Dropped(), len(oref.items), oref.dropped)
				}
			}
		}
		newest.Close()
		oldest.Close()
		var got []int
		for v := range newest.Out() {
			got = append(got, v)
		}
		if want := nref.popMany(c); !slices.Equal(got, want) {
			t.Fatalf("DropNewest left %v, want %v", got, want)
		}
		got = got[:0]
		for {
			v, err := oldest.Recv(context.Background())
			if err != nil {
				break
			}
			got = append(got, v)
		}
		if want := oref.popMany(c); !slices.Equal(got, want) {
			t.Fatalf("DropOldest left %v, want %v", got, want)
		}
	})
}

// Under many senders and receivers, every value is either delivered once
// or counted as dropped, and each sender's delivered values stay in order.
func TestOverflowHammerAccountsForEveryValue(t *testing.T) {
	const senders, per = 8, 3000
	for _, kind := range []string{"DropNewest", "DropOldest"} {
		t.Run(kind, func(t *testing.T) {
			newest := chans.NewDropNewest[item](16)
			oldest := chans.NewDropOldest[item](16)
			send := newest.Send
			if kind == "DropOldest" {
				send = oldest.Send
			}
			var swg sync.WaitGroup
			for s := range senders {
				swg.Go(func() {
					for k := range per {
						send(item{s, k})
					}
				})
			}
			go func() {
				swg.Wait()
				newest.Close()
				oldest.Close()
			}()
			var mu sync.Mutex
			delivered := 0
			var rwg sync.WaitGroup
			for range 3 {
				rwg.Go(func() {
					last := map[int]int{}
					for {
						var it item
						if kind == "DropNewest" {
							v, ok := <-newest.Out()
							if !ok {
								break
							}
							it = v
						} else {
							v, err := oldest.Recv(context.Background())
							if err != nil {
								break
							}
							it = v
						}
						if prev, ok := last[it.src]; ok && it.seq <= prev {
							t.Errorf("sender %d: item %d after %d", it.src, it.seq, prev)
						}
						last[it.src] = it.seq
						mu.Lock()
						delivered++
						mu.Unlock()
					}
				})
			}
			rwg.Wait()
			dropped := newest.Dropped() + oldest.Dropped()
			if got := uint64(delivered) + dropped; got != senders*per {
				t.Fatalf("delivered %d + dropped %d = %d, want %d", delivered, dropped, got, senders*per)
			}
		})
	}
}
