package natsembed_test

import (
	"fmt"
	"os"

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
	fmt.Println(srv.JetStreamEnabled(), url == fmt.Sprintf("nats://127.0.0.1:%d", natsembed.Port(srv)))
	// Output:
	// true true
}
