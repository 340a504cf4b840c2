package auto

import (
	"reflect"
	"testing"
)

// Every field of the standard tuning is set: a constant left out of it
// would be zero.
func TestStandardTuningSetsEveryField(t *testing.T) {
	v := reflect.ValueOf(Standard())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("Standard().%s is zero", v.Type().Field(i).Name)
		}
	}
}

func TestUseChangesTheDefaultUntilPutBack(t *testing.T) {
	t2 := Standard()
	t2.StepPays = 0.4
	was := Use(t2)
	if got := Default().StepPays; got != 0.4 {
		t.Errorf("Default().StepPays %v after Use, want 0.4", got)
	}
	if c := New(1, 8, 1, Default()); c.rules[step].threshold != 0.4 {
		t.Errorf("a controller made after Use judges steps against %v, want 0.4", c.rules[step].threshold)
	}
	Use(was)
	if Default() != Standard() {
		t.Errorf("Default() %+v after putting it back, want Standard()", Default())
	}
}

func TestNewPanicsOnBadBounds(t *testing.T) {
	for _, b := range [][3]int{{0, 4, 1}, {2, 4, 1}, {1, 4, 5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d, %d, %d) did not panic", b[0], b[1], b[2])
				}
			}()
			New(b[0], b[1], b[2], std)
		}()
	}
}
