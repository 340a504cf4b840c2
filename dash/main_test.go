package dash

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test in this package must leave no goroutine behind: no event
// stream, no HTTP connection, no browser reader.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
