package natsx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// A message the server rejects (here: its subject belongs to another
// stream than the sink's ToStream) is reported at once with an error
// marked sluice.Permanent, so the core's Retry does not write it again;
// its neighbours in the chunk are stored.
func TestSinkDoesNotRetryAMessageTheServerRejects(t *testing.T) {
	js := serverWith(t, "OUT", "OTHER")
	sink := newSink(t, ctxT(t, time.Minute), js, natsx.ToStream("OUT"))
	err, st := publishOnce(t, sink, []natsx.Out{
		{Subject: "out.a", Data: []byte("a")},
		{Subject: "other.x", Data: []byte("x")},
		{Subject: "out.b", Data: []byte("b")},
	}, sluice.Retry(3, time.Millisecond, time.Millisecond))
	var ae *jetstream.APIError
	if !errors.As(err, &ae) || !sluice.IsPermanent(err) {
		t.Fatalf("publish: %v; want the server's rejection (a *jetstream.APIError), marked permanent", err)
	}
	wantErr(t, err, nil, "rejected", `"other.x"`)
	if ss := sink.Stats(); ss.Failed != 1 || ss.Rejected != 1 || ss.Published != 2 || st.Retries != 0 {
		t.Fatalf("sink %+v, stage retries %d; want 2 published, 1 rejected, no retry", ss, st.Retries)
	}
}
