package seeds

// The four fan-in merges measured by seed 000 ("Fan-In: Can we Go faster?",
// Denis Rodin, 2025), re-implemented as baselines for chans.Merge. Each keeps
// the shape that gives the seed its numbers: how many goroutines it starts,
// whether the output is buffered, how it waits. Like the seed's, none of them
// can be cancelled: each returns once every input has been closed and the
// output has been drained.

import (
	"reflect"
	"sync"
)

// MergeCanonical starts one goroutine per input, each forwarding to an
// unbuffered output, and one more that closes the output after a WaitGroup
// says every forwarder has returned. Seed 000's "canonical" variant.
func MergeCanonical[T any](inputs ...<-chan T) <-chan T {
	out := make(chan T)
	var wg sync.WaitGroup
	wg.Add(len(inputs))
	for _, in := range inputs {
		go func() {
			defer wg.Done()
			for v := range in {
				out <- v
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

// MergeReflect starts one goroutine that waits on every input at once with
// reflect.Select, dropping an input's case when it closes. The output is
// buffered to the number of inputs. reflect.Select allocates for every case
// on every call, so its cost grows with inputs × messages (the seed's
// 10,042,288 allocs/op at 1000 sources). Seed 000's "reflect" variant.
func MergeReflect[T any](inputs ...<-chan T) <-chan T {
	out := make(chan T, len(inputs))
	cases := make([]reflect.SelectCase, len(inputs))
	for i, in := range inputs {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in)}
	}
	go func() {
		defer close(out)
		for len(cases) > 0 {
			i, v, ok := reflect.Select(cases)
			if !ok {
				cases = append(cases[:i], cases[i+1:]...)
				continue
			}
			out <- v.Interface().(T)
		}
	}()
	return out
}

// MergeBatch splits the inputs into groups of four and starts one goroutine
// per group, each a select over its group that forwards every value with a
// blocking send; a last group of one to three inputs gets a smaller select.
// The output is buffered to the number of inputs. Seed 000's "batch"
// variant.
func MergeBatch[T any](inputs ...<-chan T) <-chan T {
	n := len(inputs)
	groups := n / 4
	out := make(chan T, n)
	var wg sync.WaitGroup
	wg.Add(groups)
	for g := range groups {
		go batchSelect4(&wg, out, inputs[4*g], inputs[4*g+1], inputs[4*g+2], inputs[4*g+3])
	}
	switch n - 4*groups {
	case 3:
		wg.Add(1)
		go batchSelect3(&wg, out, inputs[n-3], inputs[n-2], inputs[n-1])
	case 2:
		wg.Add(1)
		go batchSelect2(&wg, out, inputs[n-2], inputs[n-1])
	case 1:
		wg.Add(1)
		go batchForward(&wg, out, inputs[n-1])
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

// batchSelect4 forwards from four inputs until all have closed; a closed
// input's case is disabled by setting its variable to nil.
func batchSelect4[T any](wg *sync.WaitGroup, out chan<- T, a, b, c, d <-chan T) {
	defer wg.Done()
	for a != nil || b != nil || c != nil || d != nil {
		select {
		case v, ok := <-a:
			if !ok {
				a = nil
				continue
			}
			out <- v
		case v, ok := <-b:
			if !ok {
				b = nil
				continue
			}
			out <- v
		case v, ok := <-c:
			if !ok {
				c = nil
				continue
			}
			out <- v
		case v, ok := <-d:
			if !ok {
				d = nil
				continue
			}
			out <- v
		}
	}
}

func batchSelect3[T any](wg *sync.WaitGroup, out chan<- T, a, b, c <-chan T) {
	defer wg.Done()
	for a != nil || b != nil || c != nil {
		select {
		case v, ok := <-a:
			if !ok {
				a = nil
				continue
			}
			out <- v
		case v, ok := <-b:
			if !ok {
				b = nil
				continue
			}
			out <- v
		case v, ok := <-c:
			if !ok {
				c = nil
				continue
			}
			out <- v
		}
	}
}

func batchSelect2[T any](wg *sync.WaitGroup, out chan<- T, a, b <-chan T) {
	defer wg.Done()
	for a != nil || b != nil {
		select {
		case v, ok := <-a:
			if !ok {
				a = nil
				continue
			}
			out <- v
		case v, ok := <-b:
			if !ok {
				b = nil
				continue
			}
			out <- v
		}
	}
}

func batchForward[T any](wg *sync.WaitGroup, out chan<- T, in <-chan T) {
	defer wg.Done()
	for v := range in {
		out <- v
	}
}

// MergeLoop starts one goroutine that sweeps the inputs forever with
// non-blocking receives, dropping an input when it closes. The output is
// buffered to the number of inputs. Seed 000's "loop" variant.
//
// Kept from the seed because it shapes its numbers: the goroutine never
// parks, so while any input is open it keeps one CPU busy even when nothing
// arrives; and after dropping a closed input the sweep skips the input that
// moved into its place until the next sweep. Unlike the seed, it works on a
// copy of inputs, so the caller's slice is left as it was.
func MergeLoop[T any](inputs ...<-chan T) <-chan T {
	ins := append([]<-chan T(nil), inputs...)
	out := make(chan T, len(ins))
	go func() {
		for len(ins) > 0 {
			for i := 0; i < len(ins); i++ {
				select {
				case v, ok := <-ins[i]:
					if !ok {
						ins = append(ins[:i], ins[i+1:]...)
						continue
					}
					out <- v
				default:
				}
			}
		}
		close(out)
	}()
	return out
}
