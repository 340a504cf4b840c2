package natsx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// A message the server rejects (here: its subject belongs to another
// stream than the sink's ToStream) is reported at once, not sent again
// Retries times; its neighbours in the batch are stored.
func TestSinkDoesNotRetryAMessageTheServerRejects(t *testing.T) {
	_, url, _ := embedded(t)
	_, js := connect(t, url)
	makeStream(t, js, "OUT", "out.>")
	makeStream(t, js, "OTHER", "other.>")
	sink, err := natsx.NewSink(ctxT(t, time.Minute), js, natsx.ToStream("OUT"), natsx.Retries(3, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	err = publishOnce(t, sink,
		natsx.Out{Subject: "out.a", Data: []byte("a")},
		natsx.Out{Subject: "other.x", Data: []byte("x")},
		natsx.Out{Subject: "out.b", Data: []byte("b")})
	var ae *jetstream.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("publish: %v; want the server's rejection (a *jetstream.APIError)", err)
	}
	wantErr(t, err, nil, "rejected", `"other.x"`)
	if st := sink.Stats(); st.Failed != 1 || st.Retried != 0 || st.Published != 2 {
		t.Fatalf("sink %+v; want 2 published, 1 failed, none retried", st)
	}
}
