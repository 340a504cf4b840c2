package lab

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/par"
)

// Seed 003, IO-bound: load five CSV files (internal/seeds.WriteCSV, the
// same bytes every run) with encoding/csv: serially, with a goroutine per
// file, with a sluice pipeline, and with par.For. The files sit in the
// page cache after they are written, as they did in the seed's loops. An
// item is a record; every load is checked against a digest of every field
// of every file, in order.

type csvVariant struct {
	name     string
	baseline bool
	load     func(paths []string) ([][][]string, error)
}

func csvVariants() []csvVariant {
	return []csvVariant{
		{name: "serial (seed)", baseline: true, load: seeds.LoadSerial},
		{name: "goroutine per file (seed)", load: seeds.LoadPerFile},
		{name: "sluice Map, a worker per file", load: loadSluice},
		{name: "sluice par.For, Grain(1)", load: loadPar},
	}
}

// loadSluice reads the files in a pipeline: the paths' indexes flow to a
// Map stage with one worker per file, and a one-worker sink stores each
// file's records in its slot.
func loadSluice(paths []string) ([][][]string, error) {
	type loaded struct {
		i    int
		rows [][]string
	}
	idx := make([]int, len(paths))
	for i := range idx {
		idx[i] = i
	}
	rows := make([][][]string, len(paths))
	p := sluice.New(context.Background(), sluice.Named("csv"))
	// Chunk(1): each path travels alone, so that each worker takes one
	// file rather than one worker taking a chunk of them.
	src := sluice.FromSlice(p, "paths", idx, sluice.Chunk(1))
	read := sluice.Map(p, "read", src, max(len(paths), 1), func(_ context.Context, i int) (loaded, error) {
		r, err := seeds.ReadCSV(paths[i])
		return loaded{i, r}, err
	}, sluice.Buffer(1))
	sluice.ForEach(p, "store", read, 1, func(_ context.Context, l loaded) error {
		rows[l.i] = l.rows
		return nil
	})
	if err := p.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

func loadPar(paths []string) ([][][]string, error) {
	rows := make([][][]string, len(paths))
	errs := make([]error, len(paths))
	par.For(len(paths), func(i int) { rows[i], errs[i] = seeds.ReadCSV(paths[i]) }, par.Grain(1))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func csvExperiment() *Experiment {
	return &Experiment{
		Name: "csv", Seed: "003", Unit: "record",
		Title: "IO-bound: loading five CSV files with encoding/csv",
		Columns: []Column{
			{Key: "mb_per_s", Header: "MB/s", Format: "%.0f"},
		},
		Derive: func(r *Row) {
			if b, ok := r.Metrics["bytes"]; ok && r.NsPerItem > 0 {
				r.Metrics["mb_per_s"] = b * 1e3 / (r.NsPerItem * float64(r.ItemsPerRun))
			}
		},
		Cases: func(c *Config) []Case {
			var cases []Case
			for _, total := range c.sizes(pick(c.Mode, []int{seeds.DefaultCSVBytes}, []int{4 << 20}, []int{64 << 10})) {
				fx := &csvFixture{total: total}
				c.atEnd(fx.remove)
				for _, v := range csvVariants() {
					cs := Case{
						Group: fmt.Sprintf("%s in 5 files", bytesText(total)), Variant: v.name, Baseline: v.baseline,
					}
					cs.Setup = func() (*Instance, error) { return fx.instance(v) }
					cases = append(cases, cs)
				}
			}
			return cases
		},
	}
}

// csvFixture is the files of one size, written once for all the variants
// and removed when the invocation ends.
type csvFixture struct {
	total   int
	dir     string
	paths   []string
	records int
	digest  uint64
	bytes   int
	err     error
}

func (fx *csvFixture) make() {
	if fx.dir != "" || fx.err != nil {
		return
	}
	fx.dir, fx.err = os.MkdirTemp("", "sluice-bench-csv-")
	if fx.err != nil {
		return
	}
	if fx.paths, fx.err = seeds.WriteCSV(fx.dir, int64(fx.total), 1); fx.err != nil {
		return
	}
	want, err := seeds.LoadSerial(fx.paths)
	if fx.err = err; err != nil {
		return
	}
	for _, f := range want {
		fx.records += len(f)
	}
	fx.digest, _ = csvDigest(want)
	for _, p := range fx.paths {
		fi, err := os.Stat(p)
		if fx.err = err; err != nil {
			return
		}
		fx.bytes += int(fi.Size())
	}
}

func (fx *csvFixture) remove() {
	if fx.dir != "" {
		os.RemoveAll(fx.dir)
	}
}

func (fx *csvFixture) instance(v csvVariant) (*Instance, error) {
	if fx.make(); fx.err != nil {
		return nil, fx.err
	}
	return &Instance{
		Items: fx.records,
		Round: func(m Metrics) error {
			got, err := v.load(fx.paths)
			if err != nil {
				return err
			}
			if d, _ := csvDigest(got); d != fx.digest {
				return fmt.Errorf("loaded records differ from the files' (digest %x, want %x)", d, fx.digest)
			}
			m["bytes"] = float64(fx.bytes)
			return nil
		},
	}, nil
}

// csvDigest hashes every field of every record of every file, in order,
// with separators, and counts the fields' bytes.
func csvDigest(files [][][]string) (uint64, int) {
	h := fnv.New64a()
	n := 0
	sep := []byte{0}
	for _, f := range files {
		for _, rec := range f {
			for _, field := range rec {
				h.Write([]byte(field))
				h.Write(sep)
				n += len(field) + 1
			}
			h.Write([]byte{1})
		}
		h.Write([]byte{2})
	}
	return h.Sum64(), n
}
