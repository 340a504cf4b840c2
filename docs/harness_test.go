package docs

import (
	"slices"
	"strings"
	"testing"
)

// The harness's own rules, checked without building anything.

func TestParseBlocksReadsModesAndHiddenCode(t *testing.T) {
	md := strings.Join([]string{
		"# t",
		"```go",
		"x := 1",
		"```",
		"<!-- snippet: build -->",
		"```go",
		"y := 2",
		"```",
		"<!-- snippet: run",
		"var z = 3",
		"-->",
		"",
		"```go",
		"fmt.Println(z)",
		"```",
		"```sh",
		"go test ./...",
		"```",
		"<!-- snippet: excerpt engine.go -->",
		"  ```go",
		"  for {",
		"  ```",
	}, "\n")
	bs, err := parseBlocks("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		line             int
		mode, arg, code  string
		hidden           string
		hiddenLineNumber int
	}
	var gs []got
	for _, b := range bs {
		gs = append(gs, got{b.line, b.mode, b.arg, b.code, b.hidden, b.hline})
	}
	want := []got{
		{3, "run", "", "x := 1\n", "", 0},
		{7, "build", "", "y := 2\n", "", 0},
		{14, "run", "", "fmt.Println(z)\n", "var z = 3\n\n", 10},
		{21, "excerpt", "engine.go", "for {\n", "", 0},
	}
	if !slices.Equal(gs, want) {
		t.Errorf("got  %+v\nwant %+v", gs, want)
	}
}

func TestParseBlocksRejectsAnUnknownModeAndAnUnclosedBlock(t *testing.T) {
	if _, err := parseBlocks("x.md", "<!-- snippet: walk -->\n```go\nx\n```\n"); err == nil || !strings.Contains(err.Error(), `mode "walk"`) {
		t.Errorf("unknown mode: got %v, want an error naming it", err)
	}
	if _, err := parseBlocks("x.md", "```go\nx := 1\n"); err == nil || !strings.Contains(err.Error(), "x.md:1: unclosed") {
		t.Errorf("unclosed block: got %v, want an error at x.md:1", err)
	}
}

func TestTopLevelVarsListsOnlyVariablesOfTheOuterBlock(t *testing.T) {
	got, err := topLevelVars("p := 1\nvar q, r int\ntype T int\nconst c = 2\nif true { inner := 3; _ = inner }\n_, err := f()")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"p", "q", "r", "err"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWithImportsAddsWhatIsNamedAndNotDeclared(t *testing.T) {
	src := "package p\nfunc f() { fmt.Println(strings.ToUpper(\"a\")); var time T; _ = time.X }\n"
	out, err := withImports(src, map[string]bool{"T": true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"fmt"`, `"strings"`} {
		if !strings.Contains(out, want) {
			t.Errorf("no import %s in\n%s", want, out)
		}
	}
	if strings.Contains(out, `"time"`) {
		t.Errorf("imported time, which the function declares as a variable:\n%s", out)
	}
}

func TestCheckExcerptNeedsLinesInOrderAndAllowsElisions(t *testing.T) {
	file := "func f() {\n\ta := 1\n\tb := 2\n\tc := 3\n}\n"
	for _, c := range []struct {
		quote string
		ok    bool
	}{
		{"a := 1\nb := 2", true},
		{"  a := 1\n  b := 2  ", true}, // indentation and trailing space do not matter
		{"a := 1\n// …\nc := 3", true},
		{"a := 1\nc := 3", false}, // not contiguous
		{"c := 3\n// …\na := 1", false},
		{"d := 4", false},
	} {
		if err := checkExcerpt(c.quote, file); (err == nil) != c.ok {
			t.Errorf("checkExcerpt(%q): got %v, want ok=%v", c.quote, err, c.ok)
		}
	}
}

func TestReadmeCommandsReadsTheFirstShellBlock(t *testing.T) {
	md := "# x\n\n```sh\ngo run ./cmd/sluice/demo   # a demo\n./scripts/test            # tests\n```\n\n```sh\nother\n```\n"
	if got := readmeCommands(md); !slices.Equal(got, frontDoor) {
		t.Errorf("got %q, want %q", got, frontDoor)
	}
}
