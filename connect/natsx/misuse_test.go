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

// Settling a message twice is an error naming the mistake
// (jetstream.ErrMsgAlreadyAckd), with no effect: the counters count the
// first settlement only, and Fail with DeadLetter does not dead-letter a
// message that was already acknowledged.
func TestSettlingTwiceFailsWithoutEffect(t *testing.T) {
	_, url, _ := embedded(t)
	_, js := connect(t, url)
	makeStream(t, js, "IN", "in.>")
	makeStream(t, js, "DEAD", "dead.>")
	publishN(t, js, "in.x", 1)
	ctx := ctxT(t, 30*time.Second)
	src, err := natsx.NewSource(ctx, js, "IN", "twice", natsx.DeadLetter("dead.in", 1),
		natsx.UntilDrained(), natsx.IdleCheck(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p := sluice.New(ctx)
	var errs []error
	sluice.ForEach(p, "settle", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if err := m.Ack(); err != nil {
			return err
		}
		errs = append(errs, m.Ack(), m.Nak(0), m.Term("again"), m.Fail(errors.New("late failure")))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			t.Errorf("settlement %d after Ack: %v; want %v", i+2, err, jetstream.ErrMsgAlreadyAckd)
		}
	}
	if st := src.Stats(); st.Acked != 1 || st.Naked != 0 || st.Termed != 0 || st.DeadLettered != 0 || st.InFlight != 0 {
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
	if !m.IsZero() || m.Data() != nil || m.Subject() != "" || m.Header() != nil || m.ID() != "" {
		t.Fatalf("zero Msg: IsZero %v, Data %q, Subject %q, Header %v, ID %q; want true and zero values",
			m.IsZero(), m.Data(), m.Subject(), m.Header(), m.ID())
	}
	if _, err := m.Metadata(); err == nil {
		t.Fatal("zero Msg: Metadata returned no error")
	}
	if err := errors.Join(m.Ack(), m.Nak(0), m.Term("x"), m.Fail(nil), m.InProgress()); err != nil {
		t.Fatalf("settling the zero Msg: %v; want nil", err)
	}
}
