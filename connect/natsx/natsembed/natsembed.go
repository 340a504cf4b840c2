// Package natsembed runs an in-process nats-server with JetStream, for
// tests and demos: the zero-setup broker of natsx's tests and of
// `sluice demo`. It is a package of its own so that a program that
// imports natsx does not link nats-server; only programs that import
// natsembed do.
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startTimeout bounds how long Start waits for the server to accept
// connections.
const startTimeout = 10 * time.Second

// Start starts an in-process nats-server with JetStream on, its file
// store in dir, listening on 127.0.0.1:port (port 0 picks a free port).
// It returns the server and the URL clients connect to. Starting a second
// server on the same dir and port after the first has stopped brings back
// its streams and consumers, as a restarted broker would.
//
// The server logs nothing and installs no signal handlers. Stop it with
// [Stop]; until then it runs its own goroutines.
func Start(dir string, port int) (*server.Server, string, error) {
	if dir == "" {
		return nil, "", errors.New("natsembed: Start: empty store directory")
	}
	if port == 0 {
		port = -1 // nats-server's "any free port"
	}
	s, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
		// The server's own system account would start internal clients
		// and timers that a single-node broker does not need.
		NoSystemAccount: true,
	})
	if err != nil {
		return nil, "", fmt.Errorf("natsembed: %w", err)
	}
	go s.Start() // returns once the server is running; the server owns what it starts
	if !s.ReadyForConnections(startTimeout) {
		Stop(s)
		return nil, "", fmt.Errorf("natsembed: server on port %d not ready after %v", port, startTimeout)
	}
	if !s.JetStreamEnabled() {
		Stop(s)
		return nil, "", errors.New("natsembed: server started without JetStream")
	}
	return s, s.ClientURL(), nil
}

// Stop shuts s down and waits until it has stopped, so that its port and
// store directory can be reused. A nil s does nothing.
func Stop(s *server.Server) {
	if s == nil {
		return
	}
	s.Shutdown()
	s.WaitForShutdown()
}

// Port returns the TCP port s listens on, or 0 if it listens on none.
func Port(s *server.Server) int {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}
