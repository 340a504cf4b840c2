package natsx_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that imports natsx does not link nats-server: the embedded
// server lives in natsembed, which only tests and demos import.
func TestImportingNatsxDoesNotLinkNatsServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/sluicehq/sluice/connect/natsx").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/nats-io/nats-server") {
			t.Fatalf("natsx depends on %s", pkg)
		}
	}
}
