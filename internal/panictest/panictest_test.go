package panictest

import (
	"testing"

	"go.uber.org/goleak"
)

func TestRecoveredReportsThePanicMessage(t *testing.T) {
	if msg, ok := recovered(func() { panic("x: bad value 3") }); !ok || msg != "x: bad value 3" {
		t.Fatalf("got %q, %v; want the message and true", msg, ok)
	}
	if msg, ok := recovered(func() {}); ok || msg != "" {
		t.Fatalf("got %q, %v for no panic; want \"\" and false", msg, ok)
	}
}

func TestExpectPassesAMatchingPanic(t *testing.T) {
	Expect(t, "x: ", func() { panic("x: capacity 7 is bad") }, "capacity", "7")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
