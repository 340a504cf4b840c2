package chans_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine Merge and Elastic start must have returned.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
