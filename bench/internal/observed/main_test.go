package observed

import (
	"fmt"
	"os"
	"testing"

	"github.com/sluicehq/sluice/bench/internal/services"
	"go.uber.org/goleak"
)

// servers are the package's Kafka broker and ClickHouse server, started
// by the first test that needs them.
var servers services.Servers

func TestMain(m *testing.M) {
	code := m.Run()
	if err := servers.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
