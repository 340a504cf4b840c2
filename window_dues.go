package sluice

// When a Window worker's windows are due: a heap of their ends.

// due is a heap entry: at `at`, window w fires (emitted once the
// watermark passes its end) or, with purge, is dropped (its lateness
// is over). Entries of windows dropped (their record's gen moved on,
// the record reused) or whose end moved (a session grown) are skipped
// when popped.
type due[K comparable, A any] struct {
	at    int64
	w     *win[K, A]
	gen   uint32
	purge bool
}

// dues is a min-heap of due entries by at, typed so that a push or a pop
// allocates nothing (container/heap would box each entry).
type dues[K comparable, A any] []due[K, A]

func (h *dues[K, A]) push(d due[K, A]) {
	*h = append(*h, d)
	q := *h
	for i := len(q) - 1; i > 0; {
		up := (i - 1) / 2
		if q[up].at <= q[i].at {
			break
		}
		q[up], q[i] = q[i], q[up]
		i = up
	}
}

func (h *dues[K, A]) pop() due[K, A] {
	q := *h
	d := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q[n] = due[K, A]{}
	q = q[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && q[r].at < q[l].at {
			l = r
		}
		if q[i].at <= q[l].at {
			break
		}
		q[i], q[l] = q[l], q[i]
		i = l
	}
	*h = q
	return d
}
