package lab

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// peers are the import paths that exist only for comparison: the peer
// libraries, the seeds' re-implementations and this module.
var peers = []string{
	"github.com/destel/rill", "github.com/sourcegraph/conc", "github.com/samber/lo",
	"github.com/smallnest/chanx", "github.com/eapache/channels",
	"github.com/sluicehq/sluice/internal/seeds", "github.com/sluicehq/sluice/bench",
}

// What users install — the command, the core and its packages — builds
// none of the peers, and the command's go.mod requires none of them.
func TestNothingUsersInstallBuildsSeedsOrPeers(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps",
		"github.com/sluicehq/sluice/cmd/sluice", "github.com/sluicehq/sluice",
		"github.com/sluicehq/sluice/chans", "github.com/sluicehq/sluice/ring",
		"github.com/sluicehq/sluice/par", "github.com/sluicehq/sluice/dash").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		for _, p := range peers {
			if strings.HasPrefix(strings.TrimSpace(line), p) {
				t.Errorf("users' build depends on %s", strings.TrimSpace(line))
			}
		}
	}
	mod, err := os.ReadFile("../../../cmd/sluice/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range peers[:5] {
		if strings.Contains(string(mod), p) {
			t.Errorf("cmd/sluice/go.mod mentions %s", p)
		}
	}
}
