package auto

import "testing"

func TestReasonsHaveNames(t *testing.T) {
	want := []string{"start", "grow", "no-gain", "latency", "failing", "idle", "throttled", "probe"}
	rs := Reasons()
	if len(rs) != len(want) {
		t.Fatalf("%d reasons, want %d", len(rs), len(want))
	}
	for i, r := range rs {
		if r.String() != want[i] || !r.Valid() {
			t.Errorf("reason %d: %q (valid %v), want %q", int(r), r, r.Valid(), want[i])
		}
	}
	if None.String() != "" || Reason(42).String() != "Reason(42)" || Reason(42).Valid() || Reason(-1).Valid() {
		t.Errorf("None %q, 42 %q: want \"\" and Reason(42), 42 and -1 not valid", None, Reason(42))
	}
}
