package natsx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// Settling a message more than once does nothing after the first
// settlement: the counters count it once, and a Fail after the Ack does
// not dead-letter a message that was acknowledged.
func TestSettlingTwiceHasNoEffect(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	publishN(t, js, "in.x", 1)
	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "twice", natsx.Redeliver(1, 0), natsx.DeadLetterTo("dead.in"),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	p := sluice.New(ctx)
	sluice.ForEach(p, "settle", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		m.Ack()
		m.Ack()
		m.Fail(errors.New("late failure"))
		if err := m.InProgress(); !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			t.Errorf("InProgress after Ack: %v; want %v", err, jetstream.ErrMsgAlreadyAckd)
		}
		return nil // and ForEach acknowledges it once more
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != 1 || st.Failed != 0 || st.Redelivered != 0 || st.Termed != 0 || st.Parked != 0 || st.InFlight != 0 {
		t.Errorf("source %+v; want 1 acked and nothing else", st)
	}
	if dead := deadMessages(t, js); len(dead) != 0 {
		t.Errorf("%d dead-letter messages for a message that was acknowledged; want none", len(dead))
	}
}

// The zero Msg is not a message: settling it does nothing, and reading it
// gives zero values rather than a nil-pointer panic.
func TestZeroMsgGivesZeroValues(t *testing.T) {
	var m natsx.Msg
	if !m.IsZero() || m.Data() != nil || m.Subject() != "" || m.Header() != nil || m.ID() != "" || !m.Origin().IsZero() {
		t.Fatalf("zero Msg: IsZero %v, Data %q, Subject %q, Header %v, ID %q; want true and zero values",
			m.IsZero(), m.Data(), m.Subject(), m.Header(), m.ID())
	}
	if _, err := m.Metadata(); err == nil {
		t.Fatal("zero Msg: Metadata returned no error")
	}
	m.Expect(2)
	m.Ack()
	m.Fail(errors.New("x"))
	if err := m.InProgress(); err != nil {
		t.Fatalf("InProgress on the zero Msg: %v; want nil", err)
	}
}
