package natsx_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The scale-out test runs this binary again as a pipeline worker.
	if os.Getenv(workerEnv) != "" {
		os.Exit(runWorker())
	}
	// No exceptions: every test stops the servers and closes the
	// connections it starts, and that ends their goroutines.
	goleak.VerifyTestMain(m)
}
