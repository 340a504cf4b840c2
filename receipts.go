package sluice

import (
	"reflect"
	"sync"
)

// settleable is implemented by *Failed[T]: a dead letter settles the
// receipts of the item it holds.
type settleable interface{ settleAll(op settleOp) }

// settleOp is what the engine does to each receipt an item carries.
type settleOp struct {
	hold  int32 // > 0: add this many holds instead of settling
	cause error // with hold == 0: Fail with cause, or Ack when nil
	// visit, if set, is called with each receipt instead: the op reads
	// the receipts (a span step collecting trace contexts), settling none.
	visit func(Receipt)
}

func (op settleOp) apply(r Receipt) {
	switch {
	case r.t == nil:
	case op.visit != nil:
		op.visit(r)
	case op.hold > 0:
		r.hold(op.hold)
	case op.cause != nil:
		r.Fail(op.cause)
	default:
		r.Ack()
	}
}

var ack = settleOp{}

// receipts applies op to every receipt v carries; it is nil for a type
// that carries none, so a stage pays a nil check (per item in ForEach, FlatMap and
// Filter's drops; per chunk elsewhere) for it.
type receipts[T any] func(v *T, op settleOp)

// receiptsOf returns the receipts walker of T, or nil when T carries no
// receipt. It is worked out once per type, with reflection, when a stage
// is built.
func receiptsOf[T any]() receipts[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(carrierType) {
		// The common case, without reflection per item.
		return func(v *T, op settleOp) { op.apply(any(v).(Carrier).Origin()) }
	}
	if t.Kind() == reflect.Pointer && t.Implements(carrierType) {
		// Items held by pointer (*M where M embeds a Receipt).
		return func(v *T, op settleOp) {
			if c := any(*v).(Carrier); !isNilPointer(c) {
				op.apply(c.Origin())
			}
		}
	}
	w := walkerOf(t)
	if w == nil {
		return nil
	}
	return func(v *T, op settleOp) { w(reflect.ValueOf(v).Elem(), op) }
}

var (
	carrierType    = reflect.TypeFor[Carrier]()
	settleableType = reflect.TypeFor[settleable]()
	walkers        sync.Map // reflect.Type → walker, nil included; only complete answers are stored
)

// walker applies op to every receipt of the addressable value v.
type walker func(v reflect.Value, op settleOp)

// walkerOf returns the walker of type t, or nil if t carries no receipt:
// t itself (through a pointer to it, or as a pointer that is a Carrier,
// nil pointers skipped), an interface's dynamic value, or the elements of
// a slice or array. Any number of goroutines may ask at once: an answer is
// stored only once it is complete, so a lookup never sees a type's answer
// half made (two goroutines may both work it out, and get the same).
func walkerOf(t reflect.Type) walker {
	return walkerIn(t, nil)
}

// walkerIn is walkerOf for t met while working out the walkers of the
// types in outer: a type that contains itself (type T []T) carries
// nothing through itself.
func walkerIn(t reflect.Type, outer []reflect.Type) walker {
	if w, ok := walkers.Load(t); ok {
		return w.(walker)
	}
	for _, o := range outer {
		if o == t {
			return nil
		}
	}
	var w walker
	switch {
	case t.Kind() == reflect.Interface:
		// Any dynamic type: checked per item.
		w = func(v reflect.Value, op settleOp) {
			if c, ok := v.Interface().(Carrier); ok && !isNilPointer(c) {
				op.apply(c.Origin())
			}
		}
	case reflect.PointerTo(t).Implements(carrierType):
		w = func(v reflect.Value, op settleOp) { op.apply(v.Addr().Interface().(Carrier).Origin()) }
	case t.Kind() == reflect.Pointer && t.Implements(carrierType):
		// *M where M embeds a Receipt: the item is held by pointer.
		w = func(v reflect.Value, op settleOp) {
			if !v.IsNil() {
				op.apply(v.Interface().(Carrier).Origin())
			}
		}
	case reflect.PointerTo(t).Implements(settleableType):
		w = func(v reflect.Value, op settleOp) { v.Addr().Interface().(settleable).settleAll(op) }
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		if ew := walkerIn(t.Elem(), append(outer, t)); ew != nil {
			w = func(v reflect.Value, op settleOp) {
				for i := range v.Len() {
					ew(v.Index(i), op)
				}
			}
		}
	}
	if len(outer) == 0 {
		// Only an answer worked out from the top is complete: one for an
		// inner type may have stopped at a type still being worked out.
		walkers.Store(t, w)
	}
	return w
}

// isNilPointer reports whether c holds a nil pointer, whose promoted
// Origin would dereference it.
func isNilPointer(c Carrier) bool {
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// settleAll applies op to the receipts of the failed item, so that a dead
// letter is settled when its sink has stored it.
func (f *Failed[T]) settleAll(op settleOp) {
	if w := walkerOf(reflect.TypeFor[T]()); w != nil {
		w(reflect.ValueOf(&f.Item).Elem(), op)
	}
}

// each applies op to the receipts of every item of items; a nil walker
// does nothing.
func (w receipts[T]) each(items []T, op settleOp) {
	if w == nil {
		return
	}
	for i := range items {
		w(&items[i], op)
	}
}
