package lab

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/auto"
)

func TestAutoTuningSetsTheFieldsNamed(t *testing.T) {
	got, err := autoTuning("StepPays=0.4, HoldFirst=20,Tick=150ms")
	if err != nil {
		t.Fatal(err)
	}
	want := auto.Standard()
	want.StepPays, want.HoldFirst, want.Tick = 0.4, 20, 150*time.Millisecond
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"Nope=1", "StepPays", "HoldFirst=x", "Tick=5"} {
		if _, err := autoTuning(bad); err == nil {
			t.Errorf("autoTuning(%q): no error", bad)
		}
	}
	if got, err := autoTuning(""); err != nil || got != auto.Standard() {
		t.Errorf("autoTuning(\"\") = %+v, %v; want the standard tuning", got, err)
	}
}
