package lab

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/chans"
)

// sluiceElasticVariants are sluice's rows: chans.ElasticChan, and
// chans.Elastic used as a channel (In, Out) and through its methods, one
// value or a batch at a time.
func sluiceElasticVariants() []elasticVariant {
	return []elasticVariant{
		{name: "sluice chans.ElasticChan", seq: true, conc: true,
			ends: func(int) (chan<- int, <-chan int) {
				c := chans.NewElasticChan[int]()
				return c.In(), c.Out()
			}},
		{name: "sluice chans.Elastic In/Out", seq: true, conc: true,
			ends: func(int) (chan<- int, <-chan int) {
				e := chans.NewElastic[int]()
				return e.In(), e.Out()
			}},
		{name: "sluice chans.Elastic Push/Pop", seq: true, conc: true,
			run: func(n int, seq bool) error { return elasticMethods(n, seq, 1) }},
		{name: "sluice chans.Elastic Push/PopMany(256)", seq: true, conc: true,
			run: func(n int, seq bool) error { return elasticMethods(n, seq, 256) }},
	}
}

// elasticMethods moves 0 … n-1 through a chans.Elastic with Push and
// PopMany (batch 1 is Pop), checking their order; the consumer knows n, and
// Close then ends the Elastic, which must be empty.
func elasticMethods(n int, seq bool, batch int) error {
	e := chans.NewElastic[int]()
	defer e.Close()
	produce := func() error {
		for i := range n {
			if !e.Push(i) {
				return fmt.Errorf("Push(%d) refused", i)
			}
		}
		return nil
	}
	consume := func() error {
		ctx := context.Background()
		buf := make([]int, batch)
		for next := 0; next < n; {
			var k int
			var err error
			if batch == 1 {
				buf[0], err = e.Pop(ctx)
				k = 1
			} else {
				k, err = e.PopMany(ctx, buf[:min(batch, n-next)])
			}
			if err != nil {
				return fmt.Errorf("after %d of %d values: %w", next, n, err)
			}
			for _, v := range buf[:k] {
				if v != next {
					return fmt.Errorf("value %d is %d (out of order, lost or duplicated)", next, v)
				}
				next++
			}
		}
		if left := e.Len(); left != 0 {
			return fmt.Errorf("%d values left after all %d were taken (duplicated)", left, n)
		}
		return nil
	}
	if seq {
		if err := produce(); err != nil {
			return err
		}
		return consume()
	}
	perr := make(chan error, 1)
	go func() { perr <- produce() }()
	cerr := consume()
	if err := <-perr; err != nil {
		return err
	}
	return cerr
}
