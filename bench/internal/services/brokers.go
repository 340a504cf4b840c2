package services

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Brokers are a Kafka broker and a ClickHouse server, by address.
type Brokers struct{ Kafka, ClickHouse string }

// Servers starts a Kafka broker and a ClickHouse server with
// scripts/services, once, when first asked, for the whole process (a test
// binary's packages share them), and stops them at Stop. The broker also
// stops by itself once this process has exited (SLUICE_KAFKA_OWNER), so a
// test binary killed by a timeout leaves none behind. The zero Servers is
// ready to use.
type Servers struct {
	once sync.Once
	dir  string // the servers' files; "" until started
	b    Brokers
	err  error
}

// need is what scripts/services needs, with how to install it.
const need = "Java 17+, Maven, curl and clickhouse-server (apt-get install openjdk-17-jre-headless maven curl clickhouse-server)"

// Get returns the servers' addresses, starting them on the first call.
// Missing tools are an error, not a reason to skip.
func (s *Servers) Get() (Brokers, error) {
	s.once.Do(func() { s.b, s.err = s.start() })
	return s.b, s.err
}

func (s *Servers) start() (Brokers, error) {
	for _, tool := range []string{"java", "mvn", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Brokers{}, fmt.Errorf("services: %s is not installed; the Kafka and ClickHouse servers need %s", tool, need)
		}
	}
	dir, err := os.MkdirTemp("", "sluice-services-")
	if err != nil {
		return Brokers{}, err
	}
	s.dir = dir
	cmd, err := s.script("start")
	if err != nil {
		return Brokers{}, err
	}
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return Brokers{}, fmt.Errorf("services: scripts/services start (it needs %s): %w: %s", need, err, ee.Stderr)
	} else if err != nil {
		return Brokers{}, fmt.Errorf("services: scripts/services start: %w", err)
	}
	vars := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	b := Brokers{Kafka: vars["KAFKA_BROKERS"], ClickHouse: vars["CLICKHOUSE_ADDR"]}
	if b.Kafka == "" || b.ClickHouse == "" {
		return b, fmt.Errorf("services: scripts/services start printed no addresses: %q", out)
	}
	return b, nil
}

// Stop stops the servers, if they were started, and removes their files.
func (s *Servers) Stop() error {
	if s.dir == "" {
		return nil
	}
	defer os.RemoveAll(s.dir)
	cmd, err := s.script("stop")
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("services: scripts/services stop: %w: %s", err, out)
	}
	return nil
}

// script is scripts/services with arg, its files in s.dir.
func (s *Servers) script(arg string) (*exec.Cmd, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "services"), arg)
	cmd.Env = append(os.Environ(), "SLUICE_SERVICES_DIR="+s.dir, fmt.Sprintf("SLUICE_KAFKA_OWNER=%d", os.Getpid()))
	return cmd, nil
}

// repoRoot is the nearest directory, from the working directory up, that
// holds scripts/services.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "services")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("services: no scripts/services in the working directory or above it (run from the repository)")
		}
		dir = up
	}
}
