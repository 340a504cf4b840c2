// Package docs tests the code in the guides: every ```go block in the
// repository's README.md and in docs/**/*.md is compiled, and run unless
// it says otherwise, by TestSnippets (snippets_test.go), so that no guide
// can rot. Run it from this directory:
//
//	cd docs && go test -run Snippets .
//
// ./scripts/test runs it with every other module that go.work lists.
// TestFrontDoor (frontdoor_test.go) runs the README's first command,
// go run ./cmd/sluice/demo, on a clean copy of the repository.
//
// # Writing a block the harness accepts
//
// A block is one of:
//
//   - a whole file: it begins (after comments) with a package clause.
//     package main with a func main is built and run as it stands; a
//     package with Test functions needs the test mode below.
//   - declarations (types, funcs, vars): they are compiled.
//   - statements: they become the body of
//     func run(ctx context.Context) error, which main calls with a context
//     that ends after a minute; a nil return (or falling off the end) is
//     success. Variables the statements declare at their top level need no
//     use (the harness adds one), except err: a non-nil err at the end is
//     returned, so a fragment that ends with err := p.Wait() fails the test
//     when the pipeline fails.
//
// Imports are added for the packages a declarations or statements block
// names (context, fmt, time, sluice, kafkax, natsx, … — the table is
// importFor in snippets_test.go); a whole file lists its own.
//
// An HTML comment directly before the block (invisible on GitHub) sets
// its mode and supplies what the reader need not see:
//
//	<!-- snippet: run -->       the default: build and run, exit status 0
//	<!-- snippet: build -->     build only: it needs a Kafka broker or a
//	                            ClickHouse server (or the network)
//	<!-- snippet: test -->      a whole _test.go file: go test runs it
//	<!-- snippet: excerpt engine.go -->
//	                            quoted from a file of the repository: each
//	                            line (trimmed) must appear there, in order
//	                            and contiguous; a line "// …" skips any
//	                            number of lines
//
// Lines after the mode, up to "-->", are hidden Go declarations compiled
// into the block's package (a type, a stand-in for a database, the input
// the statements read):
//
//	<!-- snippet: run
//	var events = []string{"1,ACME,2.5"}
//	-->
//
// Each block is a package of its own in a temporary module that uses the
// repository's modules through a generated go.work; errors are reported at
// the block's line in its markdown file. One program links every block's
// package and runs one block per process, so the whole test costs one link:
// hidden code must not act in init functions or package-level variables
// (they run in every block's process), and a whole file keeps its side
// effects in main. Blocks in other languages (sh,
// text) are not Go and are left alone. NATS blocks run on an embedded
// server (natsembed); blocks that need Kafka or ClickHouse are built only.
package docs
