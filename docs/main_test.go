package docs

import (
	"testing"

	"go.uber.org/goleak"
)

// The harness must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
