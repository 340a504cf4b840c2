package sluice

import (
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write docs/stages.md from the kinds' table (go generate)")

// The table holds every kind once, in the order of their bits, each with
// its names and at least one constructor.
func TestTheKindTableHoldsEveryKindInOrder(t *testing.T) {
	if got, want := len(kindTable), bitsBelow(kindCount); got != want {
		t.Fatalf("kindTable has %d kinds, want %d (one per bit below kindCount)", got, want)
	}
	names := map[string]bool{}
	for i, k := range kindTable {
		if k.kind != stageKind(1)<<i {
			t.Errorf("kindTable[%d] is kind %#x, want %#x", i, uint32(k.kind), uint32(1)<<i)
		}
		if k.name == "" || k.label == "" || len(k.funcs) == 0 || k.does == "" {
			t.Errorf("kindTable[%d] (%q) lacks a name, label, constructor or description", i, k.name)
		}
		if names[k.name] {
			t.Errorf("two kinds are reported as %q", k.name)
		}
		names[k.name] = true
	}
}

func bitsBelow(k stageKind) int {
	n := 0
	for ; k > 1; k >>= 1 {
		n++
	}
	return n
}

// Every stage reports the kind the table gives its constructor: Stats and
// a Tracer see the same name.
func TestEveryStageReportsItsKindsName(t *testing.T) {
	p := New(context.Background())
	nop := func(context.Context, int) error { return nil }
	id := func(_ context.Context, v int) (int, error) { return v, nil }
	src := FromSlice(p, "source", []int{1, 2, 3})
	bs := Broadcast(p, "broadcast", src, 11)
	m := Map(p, "map", bs[0], 1, id)
	o := OrderedMap(p, "ordered-map", bs[1], 1, id)
	f := Filter(p, "filter", bs[2], 1, func(context.Context, int) (bool, error) { return true, nil })
	fm := FlatMap(p, "flat-map", bs[3], 1, func(_ context.Context, v int, emit func(int) bool) error { emit(v); return nil })
	ForEach(p, "for-each", Merge(p, "merge", []Stream[int]{m, o, f, fm}), 1, nop)
	ForEachChunk(p, "for-each-chunk", Unbatch(p, "unbatch", Batch(p, "batch", bs[4], 2, time.Second)), 1,
		func(context.Context, []int) error { return nil })
	parts := Partition(p, "partition", bs[5], 1, func(v int) int { return v })
	Reduce(p, "reduce", parts[0], 0, func(a, v int) int { return a + v })
	Collect(p, "collect", bs[6])
	keyed := Keyed(p, "keyed", bs[9], 1, KeyFuncs[int, int, int, int]{
		Key:  func(v int) int { return v },
		Item: func(_ context.Context, _ int, _ *int, v int, emit func(int) bool) error { emit(v); return nil },
	})
	win := Window(p, "window", bs[10], 1, WindowSpec[int, int, int]{
		Windows: Tumbling(time.Second),
		Time:    func(v int) time.Time { return time.Unix(int64(v), 0) },
		Fold:    func(acc *int, v int) { *acc += v },
	})
	Collect(p, "collect-keyed", keyed)
	Collect(p, "collect-window", win)
	ch := ToChan(p, "to-chan", bs[7])
	seq := ToSeq(p, "to-seq", bs[8])
	go func() {
		for range ch {
		}
	}()
	for range seq {
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range p.Stats().Stages {
		if s.Name == "collect-keyed" || s.Name == "collect-window" {
			continue
		}
		if s.Kind != s.Name {
			t.Errorf("stage %q reports kind %q; its constructor's kind is %q", s.Name, s.Kind, s.Name)
		}
		seen[s.Kind] = true
	}
	for _, k := range kindTable {
		if !seen[k.name] {
			t.Errorf("no stage of kind %q was built", k.name)
		}
	}
}

// The catalogue lists every exported function that returns a StageOption,
// with the fit that function's option declares.
func TestTheOptionCatalogueMatchesTheOptions(t *testing.T) {
	var dead Stream[Failed[int]]
	built := map[string]StageOption{
		"Buffer": Buffer(1), "Chunk": Chunk(1), "OnFull": OnFull(Block), "Reorder": Reorder(1),
		"Gather": Gather(1), "Auto": Auto(1, 2), "Throttle": Throttle(waitNone{}), "Timeout": Timeout(time.Second),
		"Retry": Retry(2, 0, 0), "SkipErrors": SkipErrors(), "DeadLetter": DeadLetter(&dead),
	}
	var listed []string
	for _, o := range optionCatalogue {
		listed = append(listed, o.name)
		b, ok := built[o.name]
		if !ok {
			t.Errorf("the catalogue lists %s, which this test does not build", o.name)
			continue
		}
		if got := b.(stageOption).fit; got != o.fit {
			t.Errorf("%s fits %s; the catalogue says %s", o.name, got.where(), o.fit.where())
		}
	}
	slices.Sort(listed)
	if got := optionFuncs(t); !slices.Equal(got, listed) {
		t.Errorf("the functions returning a StageOption are %v; the catalogue lists %v", got, listed)
	}
}

type waitNone struct{}

func (waitNone) Wait(context.Context) error { return nil }

// optionFuncs returns the exported functions of the package that return a
// StageOption, sorted.
func optionFuncs(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, d := range packageFuncs(t) {
		r := d.Type.Results
		if d.Recv != nil || !d.Name.IsExported() || r == nil || len(r.List) != 1 {
			continue
		}
		if id, ok := r.List[0].Type.(*ast.Ident); ok && id.Name == "StageOption" {
			names = append(names, d.Name.Name)
		}
	}
	slices.Sort(names)
	return names
}

// packageFuncs parses the package's non-test files and returns their
// function declarations, with comments.
func packageFuncs(t *testing.T) []*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.FuncDecl
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				out = append(out, fd)
			}
		}
	}
	return out
}

// A doc comment of an option that lists the stages it fits ([Map],
// [Filter], …) lists them all, and no other.
func TestOptionDocsListTheStagesTheyFit(t *testing.T) {
	funcKind := map[string]stageKind{}
	for _, k := range kindTable {
		for _, f := range k.funcs {
			funcKind[f] = k.kind
		}
	}
	fitOf := map[string]optionFit{}
	for _, o := range optionCatalogue {
		fitOf[o.name] = o.fit
	}
	link := regexp.MustCompile(`\[([A-Za-z0-9]+)\]`)
	for _, d := range packageFuncs(t) {
		fit, ok := fitOf[d.Name.Name]
		if !ok || d.Recv != nil || d.Doc == nil {
			continue
		}
		var named stageKind
		n := 0
		for _, m := range link.FindAllStringSubmatch(d.Doc.Text(), -1) {
			if k, ok := funcKind[m[1]]; ok && named&k == 0 {
				named |= k
				n++
			}
		}
		if n >= 3 && named != fit.fits {
			t.Errorf("%s's doc names the stages %s; it fits %s", d.Name.Name, kindList(named), kindList(fit.fits))
		}
	}
}

// Call.Kind's doc names exactly the kinds whose calls a Tracer sees: those
// with a function.
func TestCallKindsDocNamesTheKindsWithAFunction(t *testing.T) {
	src, err := os.ReadFile("trace.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\s*Kind\s+string\s*//(.*)$`).FindSubmatch(src)
	if line == nil {
		t.Fatal("trace.go: no line `Kind string // …` in Call")
	}
	var named stageKind
	for _, w := range regexp.MustCompile(`[a-z][a-z-]*`).FindAllString(string(line[1]), -1) {
		for _, k := range kindTable {
			if k.name == w {
				named |= k.kind
			}
		}
	}
	if named != withFunction {
		t.Errorf("Call.Kind's doc names %s; the kinds with a function are %s", kindList(named), kindList(withFunction))
	}
}

func kindList(set stageKind) string {
	var names []string
	for _, k := range kindTable {
		if set&k.kind != 0 {
			names = append(names, k.name)
		}
	}
	return strings.Join(names, ", ")
}

// docs/stages.md is what the table makes of it. Run `go generate` in the
// repository root to write it again after changing the table. Outside the
// repository (the module as downloaded, without docs/) there is no page to
// compare.
func TestStagesPageIsCurrent(t *testing.T) {
	path := filepath.Join("docs", "stages.md")
	if _, err := os.Stat(filepath.Join("docs", "go.mod")); err != nil {
		t.Skip("no docs module here (a downloaded module): nothing to compare")
	}
	want := stagesPage()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from the kinds' table: run `go generate` in the repository root (got %d bytes, want %d)", path, len(got), len(want))
	}
}

// stagesPage renders the catalogue of stages and options.
func stagesPage() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("<!-- Generated from kinds.go and options_table.go by `go generate` in the repository root; do not edit. -->\n\n")
	w("# Stages and the options that fit them\n\n")
	w("Every stage is started by a function of one shape, `(p, name, input, workers, f, options…)`\n")
	w("(a source has no input, most stages no workers or function). *Kind* is how\n")
	w("`StageStats.Kind` and a tracer's `Call.Kind` name the stage, and what the\n")
	w("live page, Prometheus (`kind` label) and OpenTelemetry (`sluice.stage.kind`) show.\n\n")
	w("| stage | kind | what it does | options that fit |\n| --- | --- | --- | --- |\n")
	for _, k := range kindTable {
		var funcs, opts []string
		for _, f := range k.funcs {
			funcs = append(funcs, "`"+f+"`")
		}
		for _, o := range optionCatalogue {
			if o.fit.fits&k.kind != 0 {
				opts = append(opts, "`"+o.name+"`")
			}
		}
		if len(opts) == 0 {
			opts = []string{"none"}
		}
		w("| %s | `%s` | %s | %s |\n", strings.Join(funcs, ", "), k.name, k.does, strings.Join(opts, ", "))
	}
	w("\n## Options\n\n| option | what it sets | fits |\n| --- | --- | --- |\n")
	for _, o := range optionCatalogue {
		w("| `%s` | %s | %s |\n", o.name, o.does, o.fit.where())
	}
	w("\nA stage given an option that does not fit it panics when it is built,\n")
	w("naming the stage, the option and where it fits:\n\n```\n%s\n%s\n```\n",
		misfit(kindMerge, Reorder(8)), misfit(kindForEach, Buffer(10)))
	w("\nThe options of the call chain (`Throttle`, `Timeout`, `Retry`, `SkipErrors`,\n")
	w("`DeadLetter`) are explained in [failures and drains](failures-and-drains.md),\n")
	w("`Auto` and `Throttle` in [workers and rates](workers-and-rates.md), and\n")
	w("the edge's options in [the contract](contract.md).\n")
	return b.String()
}

// misfit returns the panic message of a stage of kind k named "m" given o.
func misfit(k stageKind, o StageOption) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	stageOptions(k, "m", []StageOption{o})
	return "no panic"
}

// The package documentation names every stage's constructor and every
// option, pipeline's and stage's.
func TestPackageDocNamesEveryStageAndOption(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range kindTable {
		names = append(names, k.funcs...)
	}
	for _, d := range packageFuncs(t) {
		r := d.Type.Results
		if d.Recv == nil && d.Name.IsExported() && r != nil && len(r.List) == 1 {
			if id, ok := r.List[0].Type.(*ast.Ident); ok && (id.Name == "Option" || id.Name == "StageOption") {
				names = append(names, d.Name.Name)
			}
		}
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "["+n+"]") {
			t.Errorf("doc.go does not name [%s]", n)
		}
	}
}
