package metrics

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sluicehq/sluice"
)

// Pipelines is the set of pipelines an exporter shows — prom's
// Collector, otelx's Metrics, dash's Board — told apart by name, as their
// series are. The zero Pipelines is an empty set, ready to use; its
// methods are safe for concurrent use.
type Pipelines struct {
	mu   sync.Mutex
	list []*sluice.Pipeline
}

// Add adds p after the pipelines already there; adding one already there
// does nothing. It returns an error, and adds nothing, if another
// pipeline with p's name is there: give pipelines different names with
// [sluice.Named], or remove the old one first (as a job that reruns under
// one name would), or if p is nil: an exporter panics with it, naming
// itself.
func (s *Pipelines) Add(p *sluice.Pipeline) error {
	if p == nil {
		return errors.New("Add called with a nil *sluice.Pipeline")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.list {
		if q == p {
			return nil
		}
		if q.Name() == p.Name() {
			return fmt.Errorf("a pipeline named %q is already exported; name pipelines apart with sluice.Named or remove the old one", p.Name())
		}
	}
	s.list = append(s.list, p)
	return nil
}

// Remove removes p, and reports whether it was there.
func (s *Pipelines) Remove(p *sluice.Pipeline) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.list)
	s.list = slices.DeleteFunc(s.list, func(q *sluice.Pipeline) bool { return q == p })
	return len(s.list) < n
}

// List returns the pipelines, in the order they were added: a copy, which
// the caller may keep.
func (s *Pipelines) List() []*sluice.Pipeline {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// Clear removes every pipeline.
func (s *Pipelines) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = nil
}
