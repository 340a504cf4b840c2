package market

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
)

// The first signal drains; the second runs the cleanups and exits with
// 128 + the signal's number.
func TestSecondSignalCleansUpAndExitsAtOnce(t *testing.T) {
	ch := make(chan os.Signal, 1)
	var out bytes.Buffer
	exited := make(chan int, 1)
	in := WatchSignals("sluice", ch, &out, func(code int) { exited <- code })
	defer in.Stop()
	cleaned := false
	in.OnExit(func() { cleaned = true })

	ch <- syscall.SIGTERM
	<-in.Draining().Done()
	if got := context.Cause(in.Draining()).Error(); got != "terminated" {
		t.Fatalf("drain cause %q; want the signal, terminated", got)
	}
	select {
	case code := <-exited:
		t.Fatalf("exited with %d at the first signal", code)
	default:
	}
	ch <- syscall.SIGINT
	if code := <-exited; code != 130 || !cleaned {
		t.Fatalf("second signal: exit %d, cleaned up %v; want 130 (128+SIGINT) after the cleanups", code, cleaned)
	}
	if !strings.Contains(out.String(), "draining") || !strings.Contains(out.String(), "exiting at once") {
		t.Fatalf("stderr %q; want both signals reported", &out)
	}
}
