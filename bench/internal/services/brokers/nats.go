package brokers

import (
	"os"

	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// NATS is an embedded NATS server with JetStream, its store in a
// temporary directory of its own.
type NATS struct {
	URL  string
	Dir  string // the store, removed by Stop
	stop func()
}

// StartNATS starts a NATS server in this process, on a free loopback
// port, with its store in a new temporary directory named after prefix.
func StartNATS(prefix string) (*NATS, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	srv, url, err := natsembed.Start(dir, 0)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &NATS{URL: url, Dir: dir, stop: func() { natsembed.Stop(srv) }}, nil
}

// Stop shuts the server down and removes its store.
func (n *NATS) Stop() {
	n.stop()
	os.RemoveAll(n.Dir)
}
