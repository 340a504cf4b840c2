package par_test

// Tests of the seed 003 baselines in internal/seeds that this package's
// benchmarks measure against: a baseline that sums wrong makes every ratio
// meaningless.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/seeds"
)

func TestSeedSumsAgreeWithSerialSum(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 100, 10007} {
		xs := ints(n)
		want := seeds.FindSum(xs)
		if got := seeds.FindSumConc(xs); got != want {
			t.Errorf("n=%d: FindSumConc = %d, want %d", n, got, want)
		}
		for _, parts := range []int{1, 2, 3, 8, 200} {
			if got := seeds.FindSumSplit(parts, xs); got != want {
				t.Errorf("n=%d: FindSumSplit(%d) = %d, want %d", n, parts, got, want)
			}
		}
	}
}

func TestFindSumSplitPanicsOnNoParts(t *testing.T) {
	got, _ := recovered(func() { seeds.FindSumSplit(0, []int{1}) }).(string)
	if !strings.HasPrefix(got, "seeds: ") || !strings.Contains(got, "got 0") {
		t.Errorf("panic %q, want one starting \"seeds: \" and containing \"got 0\"", got)
	}
}

// writeCSV writes the seed's files, small, into a fresh directory.
func writeCSV(t *testing.T, total int64, seed uint64) []string {
	t.Helper()
	paths, err := seeds.WriteCSV(t.TempDir(), total, seed)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestWriteCSVIsDeterministicAndSized(t *testing.T) {
	const total = 200 << 10
	a, b, c := writeCSV(t, total, 1), writeCSV(t, total, 1), writeCSV(t, total, 2)
	var size int64
	for i := range a {
		if got, want := filepath.Base(a[i]), seeds.CSVNames[i]; got != want {
			t.Errorf("file %d is %q, want %q", i, got, want)
		}
		da, _ := os.ReadFile(a[i])
		db, _ := os.ReadFile(b[i])
		dc, _ := os.ReadFile(c[i])
		if !bytes.Equal(da, db) {
			t.Errorf("%s differs between two runs with seed 1", seeds.CSVNames[i])
		}
		if bytes.Equal(da, dc) {
			t.Errorf("%s is the same for seeds 1 and 2", seeds.CSVNames[i])
		}
		size += int64(len(da))
	}
	// Quotes are not counted while writing, and the last row overshoots.
	if size < total || size > total*11/10 {
		t.Errorf("total size %d bytes, want %d to +10%%", size, total)
	}
}

func TestLoadersReturnEveryRecordInPathOrder(t *testing.T) {
	paths := writeCSV(t, 100<<10, 7)
	serial, err := seeds.LoadSerial(paths)
	if err != nil {
		t.Fatal(err)
	}
	perFile, err := seeds.LoadPerFile(paths)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(perFile, serial) {
		t.Error("LoadPerFile and LoadSerial returned different records")
	}
	for i, rows := range serial {
		if len(rows) < 2 {
			t.Fatalf("%s: %d records, want a header and rows", seeds.CSVNames[i], len(rows))
		}
		for j, r := range rows {
			if len(r) != len(rows[0]) {
				t.Fatalf("%s record %d: %d fields, want %d", seeds.CSVNames[i], j, len(r), len(rows[0]))
			}
		}
	}
	// titanic's names hold a comma and, sometimes, quotes: they survive.
	titanic := serial[4]
	if name := titanic[1][3]; !strings.Contains(name, ", ") {
		t.Errorf("titanic name %q, want \"Last, Title First\"", name)
	}
}

func TestLoadersReturnEveryFileError(t *testing.T) {
	dir := t.TempDir()
	paths := writeCSV(t, 20<<10, 1)
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("a,b\n1,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.csv")
	paths = append(paths, missing, bad)
	for name, load := range map[string]func([]string) ([][][]string, error){
		"LoadSerial": seeds.LoadSerial, "LoadPerFile": seeds.LoadPerFile,
	} {
		rows, err := load(paths)
		if rows != nil {
			t.Errorf("%s: rows = %d files, want nil on error", name, len(rows))
		}
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(fmt.Sprint(err), bad) {
			t.Errorf("%s: error %v, want both the missing file and %s", name, err, bad)
		}
	}
}
