package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/bench/internal/services"
)

// seed002Programs are the Go programs of seed 002's comparison, each a
// main package under bench/seed002.
var seed002Programs = []string{"naive", "sluice", "hand", "rill", "conc"}

const seed002Path = "github.com/sluicehq/sluice/bench/seed002/"

// goPrograms builds the programs of bench/seed002 once per invocation, with
// go build into a temporary directory removed at the end, and returns the
// directory. go runs in the working directory, which must lie in the bench
// module or in a workspace that lists it (the repository root does).
func (c *Config) goPrograms() (string, error) {
	if c.progs == nil {
		c.progs = &goBuild{}
		c.progs.dir, c.progs.err = buildGoPrograms(c.Timeout)
		if c.progs.dir != "" {
			dir := c.progs.dir
			c.atEnd(func() { os.RemoveAll(dir) })
		}
	}
	return c.progs.dir, c.progs.err
}

type goBuild struct {
	dir string
	err error
}

// buildGoPrograms builds every program of seed002Programs into a new
// temporary directory and returns it; on error it removes it.
func buildGoPrograms(timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pkgs := make([]string, len(seed002Programs))
	for i, p := range seed002Programs {
		pkgs[i] = seed002Path + p
	}
	dir, err := services.Build(ctx, "sluice-seed002-", pkgs...)
	switch {
	case errors.Is(err, services.ErrNoGo):
		return "", fmt.Errorf("go not found: %w", errSkip)
	case err != nil:
		return "", fmt.Errorf("bench/seed002 (run from the repository or bench/): %w", err)
	}
	return dir, nil
}
