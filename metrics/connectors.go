package metrics

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// A connector's metrics are described once, in its own module, and
// rendered by every exporter with the core's: the connector lists them
// with [For] and [Register] when its package is initialised, and attaches
// its statistics to the stage that reads from or writes to it
// ([sluice.Pipeline.AttachConnector]). A program then wires nothing: an
// exporter that shows a pipeline shows its connectors' series, labelled
// with the pipeline and the stage, as it shows the stages'.

// Put is what a connector metric's read function calls for each of its
// samples: the value, then the values of the metric's own Labels.
type Put = func(v float64, labels ...string)

// For returns m as a metric of a connector whose statistics are a T (the
// value its Stats method returns, attached to a stage): read calls put
// with each of m's samples of s. A stage whose [sluice.StageStats]
// Connector holds a T has m's series, labelled "pipeline", "stage", then
// m.Labels; no other stage has any. m must not be PerPipeline. Pass the
// result to [Register].
func For[T any](m Metric, read func(s T, put Put)) Metric {
	if m.PerPipeline {
		panic(fmt.Sprintf("metrics: For: connector metric %q cannot be PerPipeline", m.Name))
	}
	m.stats = reflect.TypeFor[T]()
	m.read = func(r *reader) {
		if s, ok := r.stage.Connector.(T); ok {
			read(s, r.put)
		}
	}
	return m
}

// registry holds the connectors' metrics. Exporters read the whole list
// once they start (a prom Collector's Describe, otelx's NewMetrics), so it
// is closed to Register from the first [List] on.
var registry struct {
	mu     sync.Mutex
	listed bool
	extra  []*Metric
}

// Register adds metrics made by [For] to the list that exporters render,
// after [All] and the metrics registered before, and returns them. A
// connector module calls it once per statistics type, from a
// package-level variable's initialisation, so that the list is complete
// before any exporter reads it. It panics if a metric was not made by For,
// if its name is taken or it has no help or kind, or if the list was read
// already ([List], [Read]): an exporter that started then would not
// describe the new series.
func Register(ms ...Metric) []Metric {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	taken := map[string]bool{}
	for i := range All {
		taken[All[i].Name] = true
	}
	for _, m := range registry.extra {
		taken[m.Name] = true
	}
	for _, m := range ms {
		switch {
		case m.stats == nil:
			panic(fmt.Sprintf("metrics: Register: metric %q was not made by metrics.For", m.Name))
		case taken[m.Name]:
			panic(fmt.Sprintf("metrics: Register: metric %q is already registered", m.Name))
		case m.Help == "" || m.Kind == 0:
			panic(fmt.Sprintf("metrics: Register: metric %q needs help and a kind", m.Name))
		}
		taken[m.Name] = true
	}
	if registry.listed {
		panic("metrics: Register called after the list was read: register from a package-level variable, before any exporter starts")
	}
	for _, m := range ms {
		registry.extra = append(registry.extra, &m)
	}
	return ms
}

// List returns every metric exporters render: those of [All], then the
// connectors' ([Register]), in that order. From its first call on,
// Register panics.
func List() []*Metric {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.listed = true
	l := make([]*Metric, 0, len(All)+len(registry.extra))
	for i := range All {
		l = append(l, &All[i])
	}
	return append(l, registry.extra...)
}

// Connector reports whether m is a connector's metric (made by [For]).
func (m *Metric) Connector() bool { return m.stats != nil }

// connectorTypes returns the statistics types of the registered metrics,
// each once, in the order registered.
func connectorTypes() []reflect.Type {
	var ts []reflect.Type
	for _, m := range List() {
		if m.stats != nil && !slices.Contains(ts, m.stats) {
			ts = append(ts, m.stats)
		}
	}
	return ts
}

// filled returns a value of t with every exported field of a kind
// statistics have set to a value of its own (the i-th field: i+1 in its
// unit): a connector's statistics in which each metric has series.
func filled(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	if t.Kind() != reflect.Struct {
		return v
	}
	for i := range t.NumField() {
		f := v.Field(i)
		if !t.Field(i).IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if f.Type() == reflect.TypeFor[time.Duration]() {
				f.SetInt(int64(i+1) * int64(time.Second))
			} else {
				f.SetInt(int64(i + 1))
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Float32, reflect.Float64:
			f.SetFloat(float64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString(fmt.Sprint("v", i+1))
		}
	}
	return v
}

// Unread returns the exported fields of the statistics type T that no
// registered metric reads, less those named in notExported: a connector's
// test calls it, listing what it leaves out on purpose, so that a field
// added to its statistics is either exported or said not to be. A field
// counts as read when changing it changes a sample.
func Unread[T any](notExported ...string) []string {
	t := reflect.TypeFor[T]()
	base := filled(t)
	samples := func(v reflect.Value) []string {
		s := sluice.Snapshot{Pipeline: "p", Stages: []sluice.StageStats{{Name: "s", Connector: v.Interface()}}}
		var out []string
		Read(s, func(x Sample) {
			if x.Metric.stats == t {
				out = append(out, fmt.Sprint(x.Metric.Name, x.Labels, x.Value))
			}
		})
		return out
	}
	want := samples(base)
	var unread []string
	for i := range t.NumField() {
		name := t.Field(i).Name
		if !t.Field(i).IsExported() || slices.Contains(notExported, name) {
			continue
		}
		v := reflect.New(t).Elem()
		v.Set(base)
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(f.Int() + 1000*int64(time.Second))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(f.Uint() + 1000)
		case reflect.Float32, reflect.Float64:
			f.SetFloat(f.Float() + 1000)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.String:
			f.SetString(f.String() + "x")
		}
		if slices.Equal(samples(v), want) {
			unread = append(unread, name)
		}
	}
	return unread
}

// Unnamed is the test a connector runs against its docs: it reads the
// docs page at path and returns an error naming each metric of [List]
// whose name begins with prefix and whose Prometheus name
// ([Metric.PrometheusName]) the page does not write in backquotes, as a
// docs page writes a series — or saying that no metric begins with
// prefix. nil: the page names them all.
func Unnamed(path, prefix string) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var missing []string
	n := 0
	for _, m := range List() {
		if !strings.HasPrefix(m.Name, prefix) {
			continue
		}
		n++
		if name := m.PrometheusName(); !strings.Contains(string(page), "`"+name) {
			missing = append(missing, name)
		}
	}
	switch {
	case n == 0:
		return fmt.Errorf("metrics: no metric's name begins with %q", prefix)
	case len(missing) > 0:
		return fmt.Errorf("metrics: %s does not name %s", path, strings.Join(missing, ", "))
	}
	return nil
}
