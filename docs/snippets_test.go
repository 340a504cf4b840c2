package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// importFor maps a package name a block uses to the path imported for it.
var importFor = map[string]string{
	"atomic":      "sync/atomic",
	"bufio":       "bufio",
	"bytes":       "bytes",
	"chans":       "github.com/sluicehq/sluice/chans",
	"clickhousex": "github.com/sluicehq/sluice/connect/clickhousex",
	"context":     "context",
	"csv":         "encoding/csv",
	"dash":        "github.com/sluicehq/sluice/dash",
	"errors":      "errors",
	"filepath":    "path/filepath",
	"fmt":         "fmt",
	"http":        "net/http",
	"httptest":    "net/http/httptest",
	"io":          "io",
	"iter":        "iter",
	"jetstream":   "github.com/nats-io/nats.go/jetstream",
	"json":        "encoding/json",
	"kafkax":      "github.com/sluicehq/sluice/connect/kafkax",
	"kgo":         "github.com/twmb/franz-go/pkg/kgo",
	"log":         "log",
	"maps":        "maps",
	"math":        "math",
	"nats":        "github.com/nats-io/nats.go",
	"natsembed":   "github.com/sluicehq/sluice/connect/natsx/natsembed",
	"natsx":       "github.com/sluicehq/sluice/connect/natsx",
	"net":         "net",
	"os":          "os",
	"otelx":       "github.com/sluicehq/sluice/otelx",
	"par":         "github.com/sluicehq/sluice/par",
	"prom":        "github.com/sluicehq/sluice/prom",
	"prometheus":  "github.com/prometheus/client_golang/prometheus",
	"promhttp":    "github.com/prometheus/client_golang/prometheus/promhttp",
	"rand":        "math/rand/v2",
	"rate":        "golang.org/x/time/rate",
	"ring":        "github.com/sluicehq/sluice/ring",
	"runtime":     "runtime",
	"signal":      "os/signal",
	"sdkmetric":   "go.opentelemetry.io/otel/sdk/metric",
	"sdktrace":    "go.opentelemetry.io/otel/sdk/trace",
	"slices":      "slices",
	"slog":        "log/slog",
	"sluice":      "github.com/sluicehq/sluice",
	"sort":        "sort",
	"sql":         "database/sql",
	"strconv":     "strconv",
	"strings":     "strings",
	"sync":        "sync",
	"syscall":     "syscall",
	"testing":     "testing",
	"time":        "time",
	"url":         "net/url",
}

// A block is one ```go block of a markdown file.
type block struct {
	file   string // relative to the repository root
	line   int    // of the block's first code line
	mode   string // run, build, test or excerpt
	arg    string // excerpt: the quoted file
	hidden string // Go declarations from the comment before the block
	hline  int    // line of the hidden code's first line
	code   string
}

func (b block) name() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// dir is the block's package directory in the temporary module.
func (b block) dir() string {
	slug := strings.NewReplacer("/", "_", ".md", "", "-", "_", ".", "_").Replace(strings.ToLower(b.file))
	return fmt.Sprintf("snip_%s_%d", slug, b.line)
}

var (
	fenceRE   = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_+-]*)\\s*$")
	snippetRE = regexp.MustCompile(`^<!--\s*snippet:\s*([a-z]+)(?:\s+([^\s-]\S*))?\s*(-->)?\s*$`)
)

// parseBlocks returns the ```go blocks of a markdown text and the comment
// that precedes each.
func parseBlocks(file, text string) ([]block, error) {
	var out []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence, lang := m[1], m[2], m[3]
		start := i + 1
		j := start
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == fence {
				break
			}
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: unclosed %s block", file, i+1, fence)
		}
		if lang == "go" {
			var code []string
			for _, l := range lines[start:j] {
				code = append(code, strings.TrimPrefix(l, indent))
			}
			b := block{file: file, line: start + 1, mode: "run", code: strings.Join(code, "\n") + "\n"}
			if err := readDirective(&b, lines, i); err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		i = j
	}
	return out, nil
}

// readDirective fills b's mode and hidden code from a snippet comment that
// ends on the last non-blank line before the fence at lines[fence].
func readDirective(b *block, lines []string, fence int) error {
	end := fence - 1
	for end >= 0 && strings.TrimSpace(lines[end]) == "" {
		end--
	}
	if end < 0 || !strings.HasSuffix(strings.TrimSpace(lines[end]), "-->") {
		return nil
	}
	begin := end
	for begin >= 0 && !strings.HasPrefix(strings.TrimSpace(lines[begin]), "<!--") {
		begin--
	}
	if begin < 0 {
		return nil
	}
	m := snippetRE.FindStringSubmatch(strings.TrimSpace(lines[begin]))
	if m == nil {
		return nil // some other comment
	}
	switch m[1] {
	case "run", "build", "test":
	case "excerpt":
		if m[2] == "" {
			return fmt.Errorf("%s:%d: snippet: excerpt needs a file", b.file, begin+1)
		}
	default:
		return fmt.Errorf("%s:%d: snippet mode %q: want run, build, test or excerpt", b.file, begin+1, m[1])
	}
	b.mode, b.arg = m[1], m[2]
	if m[3] == "" { // hidden code up to the line holding -->
		hidden := slices.Clone(lines[begin+1 : end+1])
		hidden[len(hidden)-1] = strings.TrimSuffix(strings.TrimSpace(hidden[len(hidden)-1]), "-->")
		b.hidden = strings.Join(hidden, "\n") + "\n"
		b.hline = begin + 2
	}
	return nil
}

// markdownFiles lists README.md and docs/**/*.md, relative to root.
func markdownFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files[1:])
	return files, err
}

// isWholeFile reports whether code begins with a package clause.
func isWholeFile(code string) bool {
	sc := bufio.NewScanner(strings.NewReader(code))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "//"):
		default:
			return strings.HasPrefix(l, "package ")
		}
	}
	return false
}

// withImports returns src (a file without imports after its package
// clause) with an import for each package of importFor that it names and
// does not declare itself; declared holds names the package's other files
// declare.
func withImports(src string, declared map[string]bool) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.AllErrors)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		for _, n := range declNames(d) {
			declared[n] = true
		}
	}
	need := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && !declared[id.Name] && importFor[id.Name] != "" {
				need[id.Name] = true
			}
		}
		return true
	})
	if len(need) == 0 {
		return src, nil
	}
	var imp strings.Builder
	imp.WriteString("import (\n")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range need {
			if !yield(n) {
				return
			}
		}
	}) {
		fmt.Fprintf(&imp, "\t%s %q\n", name, importFor[name])
	}
	imp.WriteString(")\n")
	// The package clause is the first line of every file generated here.
	head, rest, _ := strings.Cut(src, "\n")
	return head + "\n" + imp.String() + rest, nil
}

func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			names = append(names, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

// topLevelVars returns the variables that stmts (a function body's
// statements) declare at their top level.
func topLevelVars(stmts string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc f() {\n"+stmts+"\n}", 0)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, e := range s.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.DeclStmt: // var x T must be used; types and constants need not
			if d, ok := s.Decl.(*ast.GenDecl); ok && d.Tok == token.VAR {
				names = append(names, declNames(d)...)
			}
		}
	}
	return names, nil
}

// files returns the Go files of b's package: name → content. Every
// package is named after its directory and has a func Main that runs the
// block, which the runner calls.
func (b block) files() (map[string]string, error) {
	pkg := b.dir()
	files := map[string]string{}
	declared := map[string]bool{}
	hidden := ""
	if b.hidden != "" {
		hidden = fmt.Sprintf("package %s\n//line %s:%d\n%s", pkg, b.file, b.hline, b.hidden)
		f, err := parser.ParseFile(token.NewFileSet(), "", hidden, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: hidden code: %v", b.name(), err)
		}
		for _, d := range f.Decls {
			for _, n := range declNames(d) {
				declared[n] = true
			}
		}
	}
	line := fmt.Sprintf("//line %s:%d\n", b.file, b.line)
	switch {
	case b.mode == "test":
		if !isWholeFile(b.code) {
			return nil, fmt.Errorf("%s: a test block must be a whole file", b.name())
		}
		if b.hidden != "" {
			return nil, fmt.Errorf("%s: a test block takes no hidden code", b.name())
		}
		files["snippet_test.go"] = line + b.code
		return files, nil
	case isWholeFile(b.code):
		f, err := parser.ParseFile(token.NewFileSet(), "", b.code, parser.PackageClauseOnly)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.name(), err)
		}
		if f.Name.Name != "main" {
			return nil, fmt.Errorf("%s: a whole file is package main (or a test: mode test), not %s", b.name(), f.Name.Name)
		}
		// package main becomes package pkg on the same line, so that the
		// runner can import it; its func main is called by Main.
		code := b.code[:f.Name.Pos()-1] + pkg + b.code[f.Name.End()-1:]
		files["main.go"] = line + code
		files["zz_main.go"] = "package " + pkg + "\n\nfunc Main() { main() }\n"
	default:
		src := "package " + pkg + "\n" + line + b.code
		if _, err := parser.ParseFile(token.NewFileSet(), "", src, 0); err == nil { // declarations
			if strings.Contains(b.code, "func main()") {
				src += "\nfunc Main() { main() }\n"
			} else {
				src += "\nfunc Main() {}\n"
			}
		} else { // statements
			vars, err := topLevelVars(b.code)
			if err != nil {
				return nil, fmt.Errorf("%s: neither a file, declarations nor statements: %v", b.name(), err)
			}
			var uses strings.Builder
			for _, v := range vars {
				if v == "err" {
					uses.WriteString("if err != nil { return err }\n")
				} else {
					fmt.Fprintf(&uses, "_ = %s\n", v)
				}
			}
			src = "package " + pkg + "\n" +
				"func Main() {\n" +
				"\tctx, cancel := context.WithTimeout(context.Background(), time.Minute)\n" +
				"\terr := run(ctx)\n\tcancel()\n" +
				"\tif err != nil {\n\t\tfmt.Fprintln(os.Stderr, \"error:\", err)\n\t\tos.Exit(1)\n\t}\n}\n" +
				"func run(ctx context.Context) error {\n" + line + b.code + "\n" +
				"//line generated:1\n" + uses.String() + "return nil\n}\n"
		}
		var err error
		if files["main.go"], err = withImports(src, copyMap(declared)); err != nil {
			return nil, fmt.Errorf("%s: %v", b.name(), err)
		}
	}
	if hidden != "" {
		var err error
		if files["hidden.go"], err = withImports(hidden, copyMap(declared)); err != nil {
			return nil, fmt.Errorf("%s: hidden code: %v", b.name(), err)
		}
	}
	return files, nil
}

// runner returns the main package that runs the block named by its
// argument (a package directory).
func runner(dirs []string) string {
	var imp, tab strings.Builder
	for i, d := range dirs {
		fmt.Fprintf(&imp, "\ts%d %q\n", i, "snippets/"+d)
		fmt.Fprintf(&tab, "\t%q: s%d.Main,\n", d, i)
	}
	return "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n" + imp.String() + ")\n\n" +
		"var blocks = map[string]func(){\n" + tab.String() + "}\n\n" +
		"func main() {\n\tf, ok := blocks[os.Args[1]]\n\tif !ok {\n\t\tfmt.Fprintln(os.Stderr, \"no block\", os.Args[1])\n\t\tos.Exit(2)\n\t}\n\tf()\n}\n"
}

func copyMap(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// checkExcerpt reports whether each trimmed line of quote appears in text
// in order, contiguous except where quote has a line "// …".
func checkExcerpt(quote, text string) error {
	trim := func(s string) []string {
		var ls []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				ls = append(ls, l)
			}
		}
		return ls
	}
	have := trim(text)
	var segments [][]string
	cur := []string{}
	for _, l := range trim(quote) {
		if l == "// …" || l == "// ..." {
			segments = append(segments, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, l)
	}
	segments = append(segments, cur)
	at := 0
	for _, seg := range segments {
		if len(seg) == 0 {
			continue
		}
		found := -1
		for i := at; i+len(seg) <= len(have); i++ {
			if slices.Equal(have[i:i+len(seg)], seg) {
				found = i
				break
			}
		}
		if found < 0 {
			return fmt.Errorf("these lines are not in the file (in this order): %q", seg)
		}
		at = found + len(seg)
	}
	return nil
}

// workspace writes a go.work in dir that uses dir and every module of the
// repository's workspace, with the repository's replacements (paths made
// absolute), and copies go.work.sum.
func workspace(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json in %s: %v", root, err)
	}
	type modVersion struct{ Path, Version string }
	var work struct {
		Go      string
		Use     []struct{ DiskPath string }
		Replace []struct {
			Old, New modVersion
		}
	}
	if err := json.Unmarshal(out, &work); err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) || !(strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || p == "." || p == "..") {
			return p // already absolute, or a module path
		}
		return filepath.Join(root, p)
	}
	var w strings.Builder
	fmt.Fprintf(&w, "go %s\n\nuse (\n\t.\n", work.Go)
	for _, u := range work.Use {
		fmt.Fprintf(&w, "\t%s\n", abs(u.DiskPath))
	}
	w.WriteString(")\n")
	for _, r := range work.Replace {
		fmt.Fprintf(&w, "\nreplace %s %s => %s %s\n", r.Old.Path, r.Old.Version, abs(r.New.Path), r.New.Version)
	}
	write(t, filepath.Join(dir, "go.work"), w.String())
	write(t, filepath.Join(dir, "go.mod"), "module snippets\n\ngo "+work.Go+"\n")
	if sum, err := os.ReadFile(filepath.Join(root, "go.work.sum")); err == nil {
		write(t, filepath.Join(dir, "go.work.sum"), string(sum))
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir with the generated workspace.
func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"))
	return cmd.CombinedOutput()
}

// byPackage splits go build's output into the lines of each package
// ("# snippets/DIR" headers).
func byPackage(out []byte) map[string]string {
	m := map[string]string{}
	cur := ""
	for _, l := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(l, "# snippets/"); ok {
			cur = p
			continue
		}
		m[cur] += l + "\n"
	}
	return m
}

// TestSnippets compiles every Go block of the README and the guides and
// runs those whose mode is run (or test).
func TestSnippets(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mds, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	for _, md := range mds {
		text, err := os.ReadFile(filepath.Join(root, md))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := parseBlocks(md, string(text))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatal("found no ```go block in README.md or docs/")
	}

	dir := t.TempDir()
	workspace(t, root, dir)
	var programs, tests []string
	for _, b := range blocks {
		if b.mode == "excerpt" {
			continue
		}
		files, err := b.files()
		if err != nil {
			t.Error(err)
			continue
		}
		for name, src := range files {
			write(t, filepath.Join(dir, b.dir(), name), src)
		}
		if b.mode == "test" {
			tests = append(tests, "./"+b.dir())
		} else {
			programs = append(programs, b.dir())
		}
	}
	// One binary runs every block, each in a process of its own: one link
	// instead of one per block.
	write(t, filepath.Join(dir, "runner", "main.go"), runner(programs))
	// The build's bound is generous: a loaded 2-CPU machine compiles the
	// blocks' dependencies for minutes. Each run has a bound of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "snippets-runner")
	buildOut := map[string]string{}
	var buildErr error
	if len(programs) > 0 {
		// Without symbols and DWARF the link takes about half the time.
		var out []byte
		out, buildErr = goCmd(ctx, dir, "build", "-ldflags=-s -w", "-o", bin, "./runner")
		if buildErr != nil {
			buildOut = byPackage(out)
			if len(buildOut) == 1 && buildOut[""] != "" {
				t.Fatalf("go build: %v\n%s", buildErr, out)
			}
		}
	}
	var testOut []byte
	var testErr error
	if len(tests) > 0 {
		testOut, testErr = goCmd(ctx, dir, append([]string{"test", "-count=1"}, tests...)...)
	}

	for _, b := range blocks {
		t.Run(b.name(), func(t *testing.T) {
			switch b.mode {
			case "excerpt":
				text, err := os.ReadFile(filepath.Join(root, b.arg))
				if err != nil {
					t.Fatalf("excerpt of %s: %v", b.arg, err)
				}
				if err := checkExcerpt(b.code, string(text)); err != nil {
					t.Fatalf("excerpt of %s: %v", b.arg, err)
				}
				return
			case "test":
				if testErr != nil {
					t.Fatalf("go test: %v\n%s", testErr, testOut)
				}
				return
			}
			if out := buildOut[b.dir()]; out != "" {
				t.Fatalf("does not compile:\n%s", out)
			}
			if buildErr != nil {
				t.Fatalf("compiles, but not run: other blocks do not compile")
			}
			if b.mode == "build" {
				return
			}
			rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(rctx, bin, b.dir())
			cmd.Dir = t.TempDir()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			t.Logf("output:\n%s", out.String())
		})
	}
}
