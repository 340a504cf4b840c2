package kafkax

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A dial the client cancels (it is closing) is no outage: no line. A
// dial that fails starts one, as before.
func TestALoggerTakesACancelledDialForNoOutage(t *testing.T) {
	var buf bytes.Buffer
	g := newLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	meta := kgo.BrokerMetadata{Host: "127.0.0.1", Port: 9}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:9")
	if err == nil {
		t.Fatal("a dial with a cancelled context succeeded")
	}
	g.OnBrokerConnect(meta, 0, nil, err)
	if buf.Len() != 0 {
		t.Fatalf("a cancelled dial (%v) logged %q", err, buf.String())
	}
	g.OnBrokerConnect(meta, 0, nil, errors.New("connection refused"))
	if got := buf.String(); strings.Count(got, "broker unreachable") != 1 {
		t.Fatalf("a failed dial logged %q, want one \"broker unreachable\" line", got)
	}
}
