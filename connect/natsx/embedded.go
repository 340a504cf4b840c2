package natsx

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// embeddedStartTimeout bounds how long StartEmbedded waits for the server
// to accept connections.
const embeddedStartTimeout = 10 * time.Second

// StartEmbedded starts an in-process nats-server with JetStream on, its
// file store in dir, listening on 127.0.0.1:port (port 0 picks a free
// port). It returns the server and the URL clients connect to. Starting a
// second server on the same dir and port after the first has stopped
// brings back its streams and consumers, as a restarted broker would.
//
// The server logs nothing and installs no signal handlers. Stop it with
// [StopEmbedded]; until then it runs its own goroutines.
func StartEmbedded(dir string, port int) (*server.Server, string, error) {
	if dir == "" {
		return nil, "", errors.New("natsx: StartEmbedded: empty store directory")
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
		return nil, "", fmt.Errorf("natsx: embedded server: %w", err)
	}
	go s.Start() // returns once the server is running; the server owns what it starts
	if !s.ReadyForConnections(embeddedStartTimeout) {
		StopEmbedded(s)
		return nil, "", fmt.Errorf("natsx: embedded server on port %d not ready after %v", port, embeddedStartTimeout)
	}
	if !s.JetStreamEnabled() {
		StopEmbedded(s)
		return nil, "", errors.New("natsx: embedded server started without JetStream")
	}
	return s, s.ClientURL(), nil
}

// StopEmbedded shuts s down and waits until it has stopped, so that its
// port and store directory can be reused.
func StopEmbedded(s *server.Server) {
	if s == nil {
		return
	}
	s.Shutdown()
	s.WaitForShutdown()
}

// EmbeddedPort returns the TCP port s listens on.
func EmbeddedPort(s *server.Server) int {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}
