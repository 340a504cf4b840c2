package auto

import (
	"testing"

	"go.uber.org/goleak"
)

// The controller starts no goroutine; the check keeps it so.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
