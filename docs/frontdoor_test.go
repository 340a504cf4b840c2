package docs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// frontDoor is what the README's first block must say: the two commands
// a new reader runs first.
var frontDoor = []string{"go run ./cmd/sluice/demo", "./scripts/test"}

// readmeCommands returns the commands of the README's first ```sh block,
// comments removed.
func readmeCommands(readme string) []string {
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	if m == nil {
		return nil
	}
	var cmds []string
	for _, l := range strings.Split(m[1], "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// cleanCopy copies the files git tracks, or would track (not ignored),
// from root into a new directory: what a clean clone of the working tree
// holds, without build outputs or anything .gitignore leaves out.
func cleanCopy(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	dst := t.TempDir()
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the working tree, or a link or a submodule
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestFrontDoor runs the README's first command on a clean copy of the
// repository, and checks the second (./scripts/test, which runs this test
// among all the others) is there and parses. Every guide's blocks are
// TestSnippets'.
func TestFrontDoor(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readmeCommands(string(readme)); strings.Join(got, "\n") != strings.Join(frontDoor, "\n") {
		t.Fatalf("the README's first block runs %q, want %q", got, frontDoor)
	}

	dir := cleanCopy(t, root)
	script := filepath.Join(dir, "scripts", "test")
	if info, err := os.Stat(script); err != nil || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("./scripts/test is missing or not executable in a clean copy: %v", err)
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n ./scripts/test: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	first := strings.Fields(frontDoor[0])
	cmd := exec.CommandContext(ctx, first[0], first[1:]...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") { // the copy's own go.work
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s on a clean copy: %v after %v\n%s", frontDoor[0], err, time.Since(start).Round(time.Second), out.String())
	}
	if out.Len() == 0 {
		t.Fatal(frontDoor[0] + " printed nothing")
	}
	t.Logf("%s: %v\n%s", frontDoor[0], time.Since(start).Round(time.Second), out.String())
}
