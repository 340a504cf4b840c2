package natsembed_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server restarted on the same directory and port comes back with its
// streams, at the same URL.
func TestRestartOnTheSameDirAndPortKeepsTheStreams(t *testing.T) {
	dir := t.TempDir()
	s, url, err := natsembed.Start(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	port := natsembed.Port(s)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := nc.JetStream()
	if _, err := js.AddStream(&nats.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	natsembed.Stop(s)

	s2, url2, err := natsembed.Start(dir, port)
	if err != nil {
		t.Fatal(err)
	}
	defer natsembed.Stop(s2)
	if url2 != url {
		t.Fatalf("restarted at %s; want %s", url2, url)
	}
	nc, err = nats.Connect(url2)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ = nc.JetStream()
	if _, err := js.StreamInfo("S"); err != nil {
		t.Fatalf("stream S after the restart: %v", err)
	}
}

func TestStartWithoutADirFails(t *testing.T) {
	if _, _, err := natsembed.Start("", 0); err == nil {
		t.Fatal("Start with no store directory: no error")
	}
}
