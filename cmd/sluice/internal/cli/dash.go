package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dash"
)

// Dash is the page served for the length of one run.
type Dash struct {
	Board  *dash.Board
	srv    *http.Server
	addr   net.Addr   // where it listens
	served chan error // Serve's result, once it has returned
}

// StartDash listens on addr ([HOST]:PORT; loopback when HOST is empty, see
// DashAddr) and serves a dash board there from a goroutine that Stop ends.
// It prints the page's URL to w.
func StartDash(addr string, w io.Writer) (*Dash, error) {
	addr, err := DashAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--dash: %w", err)
	}
	d := &Dash{Board: dash.Handler(), addr: ln.Addr(), served: make(chan error, 1)}
	d.srv = &http.Server{Handler: d.Board, ReadHeaderTimeout: 5 * time.Second}
	// Shutdown waits for handlers to return, and an event stream returns
	// only when told.
	d.srv.RegisterOnShutdown(d.Board.Close)
	go func() { d.served <- d.srv.Serve(ln) }()
	fmt.Fprintf(w, "dash: live pipeline page at %s\n", pageURL(ln.Addr()))
	return d, nil
}

// Show adds p to the page.
func (d *Dash) Show(p *sluice.Pipeline) { d.Board.Add(p) }

// Stop sends open pages the final state, then closes the server and waits
// for its goroutine.
func (d *Dash) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, d.srv.Close())
	}
	if serr := <-d.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// DashAddr is the address --dash listens on: addr itself when it names a
// host, else the port on the loopback interface (127.0.0.1), so that ":8080"
// does not expose the page to the network. Listening on every interface
// takes an explicit "0.0.0.0:8080" or "[::]:8080".
func DashAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("--dash: want [HOST]:PORT, e.g. :8080 (loopback) or 0.0.0.0:8080 (every interface), got %q", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// pageURL is a URL a browser on this machine can open for a listener's
// address: a wildcard host becomes localhost.
func pageURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
