package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
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
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go not found: %w", errSkip)
	}
	dir, err := os.MkdirTemp("", "sluice-seed002-")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, p := range seed002Programs {
		args = append(args, seed002Path+p)
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build of bench/seed002 (run from the repository or bench/): %v: %s", err, lastLine(out.String()))
	}
	return dir, nil
}
