package gctype_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/gctype"
	"go.uber.org/goleak"
)

// TestMain is here for the rule that every package checks for leaks;
// gctype starts no goroutine.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHasPointers(t *testing.T) {
	type plain struct {
		a int
		b [3]float64
		c [0]*int
	}
	type withString struct {
		a int
		s string
	}
	for _, c := range []struct {
		name      string
		got, want bool
	}{
		{"int", gctype.HasPointers[int](), false},
		{"[4]uint8", gctype.HasPointers[[4]uint8](), false},
		{"plain struct", gctype.HasPointers[plain](), false},
		{"complex128", gctype.HasPointers[complex128](), false},
		{"*int", gctype.HasPointers[*int](), true},
		{"string", gctype.HasPointers[string](), true},
		{"[]int", gctype.HasPointers[[]int](), true},
		{"map", gctype.HasPointers[map[int]int](), true},
		{"any", gctype.HasPointers[any](), true},
		{"struct with a string", gctype.HasPointers[withString](), true},
		{"[2]*int", gctype.HasPointers[[2]*int](), true},
		{"func", gctype.HasPointers[func()](), true},
		{"chan", gctype.HasPointers[chan int](), true},
	} {
		if c.got != c.want {
			t.Errorf("HasPointers[%s]() = %v, want %v", c.name, c.got, c.want)
		}
	}
}
