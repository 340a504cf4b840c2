package brokers

import (
	"os"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestEmbeddedNATSServesJetStreamAndStopRemovesItsStore(t *testing.T) {
	n, err := StartNATS("services-test-nats-")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.URL)
	if err != nil {
		n.Stop()
		t.Fatal(err)
	}
	js, err := nc.JetStream()
	if err == nil {
		_, err = js.AccountInfo()
	}
	nc.Close()
	n.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n.Dir); !os.IsNotExist(err) {
		t.Fatalf("store %s still there after Stop: %v", n.Dir, err)
	}
}
