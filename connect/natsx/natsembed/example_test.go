package natsembed_test

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// A JetStream server for a test or a demo, with its store in a temporary
// directory.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "natsembed-example-")
	defer os.RemoveAll(dir)
	srv, url, err := natsembed.Start(dir, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer natsembed.Stop(srv)
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	fmt.Println(srv.JetStreamEnabled(), natsembed.Port(srv) > 0)
	// Output:
	// true true
}
