// Package brokers is the part of the lab's services that links broker
// code, kept apart so that the lab's experiments do not build it: an
// embedded NATS server, and a Kafka topic read back for a check.
package brokers
