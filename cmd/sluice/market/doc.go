// Package market is the example service that the sluice command runs: a
// market-event pipeline — decode, validate, normalise, batch, enrich,
// store, publish — with its event format and generator, on NATS JetStream
// (RunNATS). The same pipeline on Kafka and ClickHouse is the package
// onkafka: a package of its own, so that the NATS demo (cmd/sluice/demo)
// builds without the Kafka and ClickHouse clients.
//
// It is a package of its own so that the benchmark lab (bench/ in the
// repository, a module users never download) measures the very pipeline
// the command runs. Its API follows the command's needs and may change
// between versions; a program of your own should copy what it uses.
package market
