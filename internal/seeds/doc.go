// Package seeds re-implements, as faithfully as a benchmark baseline needs,
// the variants that the documents in shared/seeds measure: the four fan-in
// merges of seed 000, the elastic channel of seed 001, the sums of seed 003
// and the ring buffer of seed 004. They exist to be measured against, in the
// same run, by the package benchmarks and by the benchmark lab
// (`go run ./bench/cmd/lab`); nothing in sluice uses them otherwise.
//
// Each file names the seed it follows. Where the seed's code has a quirk
// (a goroutine that never exits, a busy loop), the quirk is kept when it
// shapes the seed's numbers and noted in a comment.
package seeds
