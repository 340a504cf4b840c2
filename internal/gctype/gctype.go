// Package gctype answers questions about how the garbage collector sees a
// type, for containers that decide once, at construction, whether slots they
// are done with must be cleared.
package gctype

import "reflect"

// HasPointers reports whether values of type T contain pointers that the
// garbage collector follows. A slot of such a type that a container keeps
// after handing its value out must be cleared, or it keeps the value's
// referents alive; for other types clearing is wasted work.
func HasPointers[T any]() bool { return hasPointers(reflect.TypeFor[T]()) }

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
