package natsx_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// quickly runs f and fails the test if it took longer than d: bad
// configuration must be reported, not waited on.
func quickly(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	start := time.Now()
	err := f()
	if took := time.Since(start); took > d {
		t.Fatalf("took %v to report %v; want under %v", took, err, d)
	}
	return err
}

func wantErr(t *testing.T, err error, is error, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error; want one saying %q", says)
	}
	if is != nil && !errors.Is(err, is) {
		t.Fatalf("got %v; want it to wrap %v", err, is)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("got %q; want it to mention %q", err, s)
		}
	}
}

func TestConnectToUnreachableServerFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	err = quickly(t, 10*time.Second, func() error {
		nc, err := natsx.Connect("nats://" + addr)
		if err == nil {
			nc.Close()
		}
		return err
	})
	wantErr(t, err, nil, "natsx: connect to nats://"+addr, "no servers available")
}

func TestConnectWithBadCredentialsFailsAndHidesThePassword(t *testing.T) {
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, Username: "sluice", Password: "right",
		NoLog: true, NoSigs: true, NoSystemAccount: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer natsembed.Stop(s)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	port := natsembed.Port(s)
	url := "nats://sluice:wrong-secret@127.0.0.1:" + itoa(port)
	err = quickly(t, 10*time.Second, func() error {
		nc, err := natsx.Connect(url)
		if err == nil {
			nc.Close()
		}
		return err
	})
	wantErr(t, err, nil, "Authorization Violation", "127.0.0.1:"+itoa(port))
	if strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("error %q shows the password", err)
	}
}

// TestConnectErrorsNeverShowThePassword tries passwords with characters
// that must be percent-encoded (and are not), and a URL without a scheme:
// net/url rejects or misreads them, and its message quotes the URL.
func TestConnectErrorsNeverShowThePassword(t *testing.T) {
	for _, tc := range []struct{ url, secret string }{
		{"nats://bob:pa%ss-w0rd@127.0.0.1:1", "pa%ss-w0rd"},
		{"nats://bob:pa#ss-w0rd@127.0.0.1:1", "pa#ss-w0rd"},
		{"nats://bob:pa/ss-w0rd@127.0.0.1:1", "pa/ss-w0rd"},
		{"nats://bob:pa?ss-w0rd@127.0.0.1:1", "pa?ss-w0rd"},
		{"nats://bob:pa ss-w0rd@127.0.0.1:1", "pa ss-w0rd"},
		{"nats://bob:pa@ss-w0rd@127.0.0.1:1", "pa@ss-w0rd"},
		{"bob:pass-w0rd@127.0.0.1:1", "pass-w0rd"},
		{"nats://bob:pass%2Dw0rd@127.0.0.1:1", "pass-w0rd"},
		{"nats://s3cret-t0ken@127.0.0.1:1", "s3cret-t0ken"},
		{"nats://127.0.0.1:2,nats://bob:pa#ss-w0rd@127.0.0.1:1", "pa#ss-w0rd"},
	} {
		_, err := natsx.Connect(tc.url, nats.Timeout(200*time.Millisecond))
		if err == nil {
			t.Fatalf("%s: connected", tc.url)
		}
		msg := err.Error()
		// Any 4 characters of the password in a row count as showing it.
		for i := 0; i+4 <= len(tc.secret); i++ {
			if strings.Contains(msg, tc.secret[i:i+4]) {
				t.Errorf("%s: error %q shows %q of the password", tc.url, msg, tc.secret[i:i+4])
				break
			}
		}
		if !strings.Contains(msg, "127.0.0.1:1") {
			t.Errorf("%s: error %q does not name the server", tc.url, msg)
		}
	}
}

func TestNewSourceOnMissingStreamFailsNamingIt(t *testing.T) {
	_, url, _ := embedded(t)
	_, js := connect(t, url)
	err := quickly(t, 10*time.Second, func() error {
		_, err := natsx.NewSource(ctxT(t, time.Minute), js, "NOPE", "reader")
		return err
	})
	wantErr(t, err, jetstream.ErrStreamNotFound, `"NOPE"`)
}

func TestNewSourceBindToMissingConsumerFailsNamingIt(t *testing.T) {
	js := serverWith(t, "IN")
	err := quickly(t, 10*time.Second, func() error {
		_, err := natsx.NewSource(ctxT(t, time.Minute), js, "IN", "ghost", natsx.Bind())
		return err
	})
	wantErr(t, err, jetstream.ErrConsumerNotFound, `"ghost"`, `"IN"`)
}

func TestNewSourceRejectsBatchLargerThanMaxInFlight(t *testing.T) {
	js := serverWith(t, "IN")
	_, err := natsx.NewSource(ctxT(t, time.Minute), js, "IN", "r", natsx.FetchBatch(100), natsx.MaxInFlight(10))
	wantErr(t, err, nil, "FetchBatch 100 exceeds MaxInFlight 10")
}

func TestNewSinkToMissingStreamFailsNamingIt(t *testing.T) {
	_, url, _ := embedded(t)
	_, js := connect(t, url)
	err := quickly(t, 10*time.Second, func() error {
		_, err := natsx.NewSink(ctxT(t, time.Minute), js, natsx.ToStream("NOWHERE"))
		return err
	})
	wantErr(t, err, jetstream.ErrStreamNotFound, `"NOWHERE"`)
}

func TestSourceAndSinkWithoutJetStreamFailAtStart(t *testing.T) {
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, NoSystemAccount: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer natsembed.Stop(s)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	_, js := connect(t, s.ClientURL())
	err = quickly(t, 10*time.Second, func() error {
		_, err := natsx.NewSource(ctxT(t, time.Minute), js, "IN", "r")
		return err
	})
	wantErr(t, err, nil, "natsx: source stream \"IN\"", "JetStream is not enabled")
	err = quickly(t, 10*time.Second, func() error {
		_, err := natsx.NewSink(ctxT(t, time.Minute), js)
		return err
	})
	wantErr(t, err, nil, "natsx: sink", "JetStream is not enabled")
}

// The sink retries nothing itself: the core's Retry, given to Publish,
// writes a failing chunk again, and once its attempts are spent the
// error fails the run naming the message.
func TestPublishRetriesAFailedWriteWithTheCoresRetry(t *testing.T) {
	js := serverWith(t, "OUT")
	sink := newSink(t, ctxT(t, time.Minute), js, natsx.ToStream("OUT"), natsx.AckTimeout(time.Second))
	err, st := publishOnce(t, sink, []natsx.Out{{Subject: "elsewhere.x", Data: []byte("x")}},
		sluice.Retry(4, time.Millisecond, time.Millisecond))
	wantErr(t, err, nil, "1 of 1 messages not stored", `"elsewhere.x"`)
	if ss := sink.Stats(); ss.Failed != 4 || ss.Published != 0 || st.Retries != 3 {
		t.Fatalf("sink %+v, stage retries %d; want 4 writes failed, 3 of them retries", ss, st.Retries)
	}
}
