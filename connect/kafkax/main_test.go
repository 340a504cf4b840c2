package kafkax_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The scale-out test runs this binary again as a pipeline worker.
	if os.Getenv(workerEnv) != "" {
		os.Exit(runWorker())
	}
	if os.Getenv(holderEnv) != "" {
		os.Exit(runHolder())
	}
	// One broker for the package's tests; each test makes its own topics
	// and groups. No broker (no Java, no Maven) is a failure, not a skip.
	stop, err := startBroker()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkax tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	if code == 0 {
		// No exceptions: every test closes the clients it creates.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
