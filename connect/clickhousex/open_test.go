package clickhousex_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

func TestOpenWrongPasswordErrorHidesPassword(t *testing.T) {
	addr := needServer(t)
	const pw = "s3cret/p@ss word"
	db, err := clickhousex.Open(ctxT(t, 20*time.Second), addr, clickhousex.Password(pw))
	if err == nil {
		db.Close()
		t.Fatal("got no error; want the server to reject the password")
	}
	for _, form := range []string{pw, "s3cret"} {
		if strings.Contains(err.Error(), form) {
			t.Errorf("got error %q; want no password in it", err)
		}
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("got error %q; want it to name %s", err, addr)
	}
}

func TestOpenUnreachableServerFailsWithinTimeout(t *testing.T) {
	// A port nobody listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	db, err := clickhousex.Open(t.Context(), addr, clickhousex.Password("hunter2"), clickhousex.Timeout(2*time.Second))
	if err == nil {
		db.Close()
		t.Fatal("got no error; want connection refused")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v; want at most about the 2 s timeout", d)
	}
	if !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("got error %q; want it to name %s and not the password", err, addr)
	}
}

// TestOpenServerThatNeverAnswersFailsWithinTimeout: a server that accepts
// the connection and then says nothing (a hung process, a port that is
// not ClickHouse's) must not hold Open past its Timeout.
func TestOpenServerThatNeverAnswersFailsWithinTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	defer func() {
		l.Close()
		<-accepted
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	db, err := clickhousex.Open(t.Context(), l.Addr().String(), clickhousex.Timeout(time.Second))
	if err == nil {
		db.Close()
		t.Fatal("got no error from a server that never answers")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v to report %q; want about the 1 s timeout", d, err)
	}
}
