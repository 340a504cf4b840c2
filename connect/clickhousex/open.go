package clickhousex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/ClickHouse/clickhouse-go" // registers the "clickhouse" driver
)

// DefaultTimeout bounds [Open]'s connection check when ctx has no
// deadline, and each dial of a new connection.
const DefaultTimeout = 10 * time.Second

// Option configures [Open].
type Option interface{ apply(*openConfig) }

type openConfig struct {
	user, password, database string
	timeout                  time.Duration
	maxConns                 int
}

type optionFunc func(*openConfig)

func (f optionFunc) apply(c *openConfig) { f(c) }

// User sets the user name ("default" unless set).
func User(name string) Option { return optionFunc(func(c *openConfig) { c.user = name }) }

// Password sets the user's password (empty unless set). It never appears
// in an error this package returns, nor in a line a [Logger] writes.
func Password(pw string) Option { return optionFunc(func(c *openConfig) { c.password = pw }) }

// Database sets the database that unqualified table names refer to
// ("default" unless set).
func Database(name string) Option { return optionFunc(func(c *openConfig) { c.database = name }) }

// Timeout sets how long [Open] waits for the server's first answer when ctx
// has no deadline, and how long a new connection may take to dial
// ([DefaultTimeout] unless set). Panics if d ≤ 0.
func Timeout(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("clickhousex: Timeout must be > 0, got %v", d))
	}
	return optionFunc(func(c *openConfig) { c.timeout = d })
}

// MaxConns caps the connections the pool keeps open and idle (8 unless
// set); each [Writer] worker holds one while it inserts. Panics if n < 1.
func MaxConns(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("clickhousex: MaxConns must be ≥ 1, got %d", n))
	}
	return optionFunc(func(c *openConfig) { c.maxConns = n })
}

// Open returns a connection pool to the ClickHouse server at addr
// (host:port of its native protocol, 9000 by default on a server), after
// checking that the server answers and accepts the credentials, within
// ctx and at most the [Timeout]. Close the pool when done with it.
func Open(ctx context.Context, addr string, opts ...Option) (*sql.DB, error) {
	cfg := openConfig{user: "default", database: "default", timeout: DefaultTimeout, maxConns: 8}
	for _, o := range opts {
		if o == nil {
			panic("clickhousex: nil Option")
		}
		o.apply(&cfg)
	}
	if addr == "" {
		return nil, errors.New("clickhousex: Open: empty address")
	}
	q := url.Values{}
	q.Set("username", cfg.user)
	q.Set("password", cfg.password)
	q.Set("database", cfg.database)
	q.Set("timeout", seconds(cfg.timeout))
	dsn := func(q url.Values) string { return (&url.URL{Scheme: "tcp", Host: addr, RawQuery: q.Encode()}).String() }
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	// The driver ignores ctx while it greets a new connection, and waits
	// up to its read timeout (a minute) for a server that accepted the
	// connection but says nothing. The check therefore runs on a
	// connection of its own whose reads and writes time out with ctx; the
	// pool's connections keep the driver's timeouts, which long inserts
	// need.
	deadline, _ := ctx.Deadline()
	wait := max(time.Until(deadline), time.Millisecond)
	pq := maps.Clone(q)
	pq.Set("read_timeout", seconds(wait))
	pq.Set("write_timeout", seconds(wait))
	if err := ping(ctx, dsn(pq)); err != nil {
		return nil, fmt.Errorf("clickhousex: connect to %s as %q: %w", addr, cfg.user, redact(err, cfg.password))
	}
	db, err := sql.Open("clickhouse", dsn(q))
	if err != nil {
		return nil, fmt.Errorf("clickhousex: open %s as %q: %w", addr, cfg.user, redact(err, cfg.password))
	}
	db.SetMaxOpenConns(cfg.maxConns)
	db.SetMaxIdleConns(cfg.maxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("clickhousex: connect to %s as %q: %w", addr, cfg.user, redact(err, cfg.password))
	}
	return db, nil
}

// ping opens one connection with dsn, pings the server and closes it.
func ping(ctx context.Context, dsn string) error {
	db, err := sql.Open("clickhouse", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// seconds formats d as the driver's DSN takes durations.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// redact returns err, or an error with err's message less every form of
// password when the message contains one (and then without err's chain,
// which would still carry it).
func redact(err error, password string) error {
	if password == "" || err == nil {
		return err
	}
	msg := err.Error()
	forms := []string{password, url.QueryEscape(password), url.PathEscape(password)}
	found := false
	for _, f := range forms {
		if strings.Contains(msg, f) {
			msg = strings.ReplaceAll(msg, f, "xxxxx")
			found = true
		}
	}
	if !found {
		return err
	}
	return errors.New(msg)
}

// Count returns the number of rows of table (a name as SQL writes it:
// "trades" or "market.trades"), as the server counts them now.
func Count(ctx context.Context, db *sql.DB, table string) (int64, error) {
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count() FROM "+table).Scan(&n); err != nil {
		return 0, fmt.Errorf("clickhousex: counting the rows of %s: %w", table, err)
	}
	return n, nil
}
