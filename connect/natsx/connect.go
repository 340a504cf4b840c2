package natsx

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Connect connects to the NATS server(s) at serverURL (a comma-separated
// list is accepted) with settings suited to a pipeline: the first attempt
// fails within 2 s with an error naming the server when it is unreachable
// or rejects the credentials; once connected, the client reconnects every
// 250 ms, for as long as it takes, buffering what is published meanwhile
// (up to 8 MiB), so that a restarting server costs a pause rather than the
// run. [Source] and [Sink] bound how long they wait for it ([MaxOutage],
// [Retries]). opts come after these defaults and may override them.
func Connect(serverURL string, opts ...nats.Option) (*nats.Conn, error) {
	base := []nats.Option{
		nats.Name("sluice"),
		nats.Timeout(2 * time.Second),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
		nats.ReconnectBufSize(8 << 20),
	}
	nc, err := nats.Connect(serverURL, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("natsx: connect to %s: %w", redact(serverURL), err)
	}
	return nc, nil
}

// redact hides the passwords and tokens of a list of server URLs.
func redact(servers string) string {
	parts := strings.Split(servers, ",")
	for i, s := range parts {
		s = strings.TrimSpace(s)
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				s = u.Redacted()
			} else {
				u.User = url.User("xxxxx")
				s = u.String()
			}
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}
