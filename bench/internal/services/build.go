package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoGo is returned by Build when no go command is on the PATH.
var ErrNoGo = errors.New("services: the go command is not on the PATH")

// Build builds the main packages pkgs (import paths, or directories as go
// build takes them) with go build into a new temporary directory named
// after prefix, and returns it; the caller removes it. go runs in the
// working directory, which must lie in the module of pkgs or in a
// workspace that lists it. On error nothing is left behind; the error
// carries the last line go printed.
func Build(ctx context.Context, prefix string, pkgs ...string) (dir string, err error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", ErrNoGo
	}
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, gobin, append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %v: %s", strings.Join(pkgs, " "), err, lastLine(out.String()))
	}
	return dir, nil
}

// lastLine is the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
