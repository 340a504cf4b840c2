package lab

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/auto"
)

// autoTuning reads LAB_AUTO_TUNE, a comma-separated list of
// Field=value over the fields of auto.Tuning ("StepPays=0.4,HoldFirst=20";
// durations as "150ms"), and returns the standard tuning with those
// changed: the auto experiment runs under it, so that a sweep is a loop
// over the variable in the shell.
func autoTuning(spec string) (auto.Tuning, error) {
	t := auto.Standard()
	v := reflect.ValueOf(&t).Elem()
	for _, kv := range strings.Split(spec, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		f := v.FieldByName(strings.TrimSpace(name))
		if !ok || !f.IsValid() {
			return t, fmt.Errorf("LAB_AUTO_TUNE: %q: want Field=value with a field of auto.Tuning", kv)
		}
		if err := setField(f, strings.TrimSpace(val)); err != nil {
			return t, fmt.Errorf("LAB_AUTO_TUNE: %s: %w", name, err)
		}
	}
	return t, nil
}

func setField(f reflect.Value, val string) error {
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(val)
		f.SetInt(int64(d))
		return err
	case f.Kind() == reflect.Int:
		n, err := strconv.Atoi(val)
		f.SetInt(int64(n))
		return err
	case f.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(val, 64)
		f.SetFloat(x)
		return err
	}
	return fmt.Errorf("field of kind %v", f.Kind())
}
