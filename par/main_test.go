package par_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: every
// function in par must have joined its helpers before it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
