package sluice

import "testing"

// Every kind of stage has a name, for the messages.
func TestEveryKindHasAName(t *testing.T) {
	for k := stageKind(1); k < kindCount; k <<= 1 {
		if k.String() == "" {
			t.Errorf("stage kind %#x has no name", uint16(k))
		}
	}
}
