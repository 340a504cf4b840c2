package seeds

// The benchmark harness of seed 000, re-implemented so that chans.Merge and
// the seed's merges are measured doing exactly the seed's work: sources
// buffered 5, count messages spread over the sources by one sending
// goroutine per source, and one reader taking count messages off the merged
// channel. One round is
//
//	wg := seeds.FaninSend(w, count)
//	sum := seeds.FaninRead(out, count)
//	wg.Wait()
//
// The seed's send started fire-and-forget goroutines; here they report to a
// WaitGroup so that every goroutine has a visible exit. The seed's read kept
// only the last value; here it returns the sum, which FaninSum predicts, so a
// benchmark can check that nothing was lost or duplicated.

import "sync"

// FaninSourceBuffer is the buffer of every source channel in seed 000's
// benchmarks.
const FaninSourceBuffer = 5

// FaninSources makes n source channels buffered FaninSourceBuffer and
// returns each twice: as send ends for FaninSend and FaninClose, and as
// receive ends for the merge under test. Seed 000's setupSources.
func FaninSources(n int) ([]chan<- int, []<-chan int) {
	w := make([]chan<- int, n)
	r := make([]<-chan int, n)
	for i := range n {
		ch := make(chan int, FaninSourceBuffer)
		w[i], r[i] = ch, ch
	}
	return w, r
}

// FaninClose closes every source. Seed 000's closeAll.
func FaninClose(w []chan<- int) {
	for _, ch := range w {
		close(ch)
	}
}

// FaninShares says how many messages FaninSend puts on each source: the
// seed's split, count/(n-1) on each source but the last and the remainder on
// the last. With 2 sources that is all of count on the first and none on the
// second; with 10 messages per source and more than 11 sources it is 10 on
// each. The seed divides by zero for one source; here one source gets all.
func FaninShares(n, count int) (each, last int) {
	if n == 1 {
		return 0, count
	}
	each = count / (n - 1)
	return each, count - each*(n-1)
}

// FaninSend starts one goroutine per source, each sending its share of
// count messages (the values 0, 1, … share-1) with blocking sends, and
// returns at once. The returned WaitGroup is done when every sender has
// returned, which happens only after its last value has been received.
// Seed 000's send.
func FaninSend(w []chan<- int, count int) *sync.WaitGroup {
	each, last := FaninShares(len(w), count)
	wg := new(sync.WaitGroup)
	wg.Add(len(w))
	for i, ch := range w {
		size := each
		if i == len(w)-1 {
			size = last
		}
		go func() {
			defer wg.Done()
			for k := range size {
				ch <- k
			}
		}()
	}
	return wg
}

// FaninRead receives count values from out and returns their sum. Seed
// 000's read, which kept the last value instead.
func FaninRead(out <-chan int, count int) int {
	sum := 0
	for range count {
		sum += <-out
	}
	return sum
}

// FaninSum is the sum FaninRead returns when FaninSend(w, count) with
// len(w) == n was merged without loss or duplication.
func FaninSum(n, count int) int {
	each, last := FaninShares(n, count)
	return (n-1)*each*(each-1)/2 + last*(last-1)/2
}
