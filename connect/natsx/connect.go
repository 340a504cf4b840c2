package natsx

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
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
// run. A [Source] bounds how long it waits for it ([MaxOutage]); a [Sink]'s
// write fails after [AckTimeout], to be retried by the stage's
// [sluice.Retry]. opts come after these defaults and may override them.
//
// Its errors never show the password, token or user information of
// serverURL, even when the URL does not parse (an unencoded % # / ? @ or
// space in the password) or has no scheme.
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
		return nil, connectError(serverURL, err)
	}
	return nc, nil
}

// connectError describes a failed connection without the credentials of
// serverURL: nats.go's own message may quote the URL, whole or cut at a
// character that should have been percent-encoded.
func connectError(servers string, err error) error {
	shown, secrets := redact(servers)
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) {
		msg = "the URL does not parse (in a password, % # / ? @ and spaces must be percent-encoded)"
		if len(secrets) == 0 {
			msg = "the URL does not parse: " + ue.Err.Error()
		}
	}
	for _, sec := range secrets {
		msg = strings.ReplaceAll(msg, sec, "xxxxx")
	}
	return &redactedError{msg: fmt.Sprintf("natsx: connect to %s: %s", shown, msg), err: err}
}

// redactedError shows a message with no credentials in it, and matches
// what the original error matches (errors.Is, errors.As) without exposing
// its text through Unwrap.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
func (e *redactedError) As(target any) bool   { return errors.As(e.err, target) }

// redact hides the user information (password, token, user name with
// password) of a comma-separated list of server URLs, parsing by hand so
// that a URL that net/url rejects — an unencoded character in the
// password, no scheme — is hidden too. It returns the list to show and
// the secrets it hid (each userinfo, password and decoded password).
func redact(servers string) (string, []string) {
	parts := strings.Split(servers, ",")
	var secrets []string
	for i, s := range parts {
		s = strings.TrimSpace(s)
		scheme, rest := "", s
		if k := strings.Index(s, "://"); k >= 0 {
			scheme, rest = s[:k+3], s[k+3:]
		}
		at := strings.LastIndex(rest, "@")
		if at < 0 {
			parts[i] = s
			continue
		}
		info, host := rest[:at], rest[at+1:]
		secrets = append(secrets, info)
		shown := "xxxxx"
		if user, pass, ok := strings.Cut(info, ":"); ok {
			shown = user + ":xxxxx"
			secrets = append(secrets, pass)
			if dec, err := url.PathUnescape(pass); err == nil && dec != pass {
				secrets = append(secrets, dec)
			}
		}
		parts[i] = scheme + shown + "@" + host
	}
	return strings.Join(parts, ","), longestFirst(secrets)
}

// longestFirst drops the empty secrets, which would match everywhere, and
// sorts the others longest first, so that a secret inside another is not
// left half replaced.
func longestFirst(secrets []string) []string {
	secrets = slices.DeleteFunc(secrets, func(s string) bool { return s == "" })
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return secrets
}
