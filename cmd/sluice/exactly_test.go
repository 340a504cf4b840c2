package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// The delivery tests of the Kafka → Kafka path: three `sluice serve`
// members read a topic of 6 partitions and produce each event's enriched
// record to NAME-enriched, each malformed or unknown one to NAME-dead,
// while events are produced. One member is SIGKILLed mid-run, at a moment
// it holds outputs past its committed offsets, and started again; later
// the broker is restarted. A read-committed reader of both topics then
// counts each input's outputs.
//
// "Past its commit" is certain, not likely: the member is stopped
// (SIGSTOP), its group's committed offsets are fetched, and it is killed
// only once the output topics hold a record made from an input at or
// past its partition's committed offset and outside the ranges the commit
// recorded as settled (kafkax's commit metadata): an input the partition's
// next owner is certain to receive and process again. Until then it is
// let go on (SIGCONT) and tried again. At least once, each such input's
// output is then in the topic twice, at least; exactly once, once.

// deliveryOutcome is what the read-committed reader found.
type deliveryOutcome struct {
	good, dead           int // inputs that must have an enriched record, a dead letter
	missing, duplicated  int // inputs without their output, with more than one
	extra                int // outputs of no input
	pastCommit           []string
	pastCommitDuplicated int // of pastCommit, how many have more than one output
	outputs              map[string]int
}

// runKillAndBrokerRestart runs the delivery test's scenario with the
// members' extra flags and returns what the reader found.
func runKillAndBrokerRestart(t *testing.T, name string, memberFlags ...string) deliveryOutcome {
	const partitions = 6
	r := newBarsRun(t, name, partitions)
	args := func(member string) []string {
		return append([]string{"--partitions", strconv.Itoa(partitions), "--member", member}, memberFlags...)
	}
	members := []*demoProcess{r.serve(t, args("m0")...), r.serve(t, args("m1")...), r.serve(t, args("m2")...)}
	awaitGroup(t, r.adm, r.names.Group, r.names.In, 3, partitions, 60*time.Second)

	// 40 batches of 500 events, 250 ms apart, from a goroutine; the test
	// acts on the members between batches 8 and 40.
	// Production waits while the broker restarts.
	progress := make(chan int, 64)
	produced := make(chan int64, 1)
	brokerBack := make(chan struct{})
	go func() {
		produced <- r.produce(t, 0, 40, false, func(i int) {
			progress <- i
			if i == 26 {
				<-brokerBack
			}
		})
		close(progress)
	}()
	upTo := func(batch int) {
		for i := range progress {
			if i >= batch {
				return
			}
		}
	}
	upTo(8)
	pastCommit := killPastCommit(t, r, members[0], "m0", progress)
	members[0].wait(t, 10*time.Second)
	upTo(16)
	members[0] = r.serve(t, args("m0")...) // the same member again: the same transactional ID
	upTo(26)
	restartBroker(t)
	close(brokerBack)
	for range progress {
	}
	n := <-produced
	if n != 40*500 {
		t.Fatalf("produced %d events, want %d", n, 40*500)
	}

	// Every input has an output (committed or not: at least once, the
	// bars' open windows hold the last inputs' receipts), then every
	// member drains, committing what it holds.
	good, dead := expected(t, r.s.kafka, r.names.In)
	awaitOutputs(t, r, good, dead, 120*time.Second)
	r.stop(t, members...)

	o := deliveryOutcome{good: len(good), dead: len(dead), pastCommit: pastCommit, outputs: map[string]int{}}
	for _, kr := range readCommitted(t, r.s.kafka, r.names.Out, partitions) {
		id, _, _ := strings.Cut(string(kr.Value), ",")
		o.outputs["id "+id]++
	}
	for _, kr := range readCommitted(t, r.s.kafka, r.names.Dead, partitions) {
		o.outputs["at "+header(kr, kafkax.HeaderPartition)+"/"+header(kr, kafkax.HeaderOffset)]++
	}
	want := map[string]bool{}
	for id := range good {
		want["id "+id] = true
	}
	for at := range dead {
		want["at "+at] = true
	}
	for k := range want {
		switch c := o.outputs[k]; {
		case c == 0:
			o.missing++
		case c > 1:
			o.duplicated++
		}
	}
	for k := range o.outputs {
		if !want[k] {
			o.extra++
		}
	}
	for _, k := range pastCommit {
		if o.outputs[k] > 1 {
			o.pastCommitDuplicated++
		}
	}
	t.Logf("%d events in: %d enriched, %d dead-lettered expected; read committed: %d missing, %d duplicated, %d extra; "+
		"the killed member held %d outputs past its commit, of which %d are now duplicated",
		n, o.good, o.dead, o.missing, o.duplicated, o.extra, len(pastCommit), o.pastCommitDuplicated)
	return o
}

// killPastCommit SIGKILLs member d (client ID member) at a moment it holds
// outputs past its commit (see the top of this file), trying again while
// batches are produced, and returns those outputs' keys ("id N" for an
// enriched record, "at P/O" for a dead letter).
func killPastCommit(t *testing.T, r *barsRun, d *demoProcess, member string, progress <-chan int) []string {
	t.Helper()
	for try := 0; ; try++ {
		parts := memberPartitions(t, r.adm, r.names.Group, r.names.In, member)
		if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// A commit the member sent just before it stopped has landed.
		time.Sleep(300 * time.Millisecond)
		offs, err := r.adm.FetchOffsets(ctxTest(t, 10*time.Second), r.names.Group)
		if err != nil {
			t.Fatal(err)
		}
		// Each partition's inputs certain to be processed again: at or past
		// the committed offset, outside the settled ranges recorded.
		again := map[int32]func(int64) bool{}
		for _, p := range parts {
			o, ok := offs.Lookup(r.names.In, p)
			committed, meta := int64(0), ""
			if ok && o.Err == nil && o.At >= 0 {
				committed, meta = o.At, o.Metadata
			}
			settled := settledPast(committed, meta)
			again[p] = func(off int64) bool {
				if off < committed {
					return false
				}
				for _, s := range settled {
					if off >= s[0] && off <= s[1] {
						return false
					}
				}
				return true
			}
		}
		byID := map[string][2]int64{}
		for _, kr := range readTopic(t, r.s.kafka, r.names.In) {
			if ev, err := market.Decode(kr.Value); err == nil {
				byID[strconv.FormatUint(ev.ID, 10)] = [2]int64{int64(kr.Partition), kr.Offset}
			}
		}
		var past []string
		for _, kr := range readTopic(t, r.s.kafka, r.names.Out) { // uncommitted too
			id, _, _ := strings.Cut(string(kr.Value), ",")
			if at, ok := byID[id]; ok && again[int32(at[0])] != nil && again[int32(at[0])](at[1]) {
				past = append(past, "id "+id)
			}
		}
		for _, kr := range readTopic(t, r.s.kafka, r.names.Dead) {
			p, err1 := strconv.ParseInt(header(kr, kafkax.HeaderPartition), 10, 32)
			off, err2 := strconv.ParseInt(header(kr, kafkax.HeaderOffset), 10, 64)
			if err1 == nil && err2 == nil && again[int32(p)] != nil && again[int32(p)](off) {
				past = append(past, fmt.Sprintf("at %d/%d", p, off))
			}
		}
		if len(past) > 0 {
			if err := d.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(past)
			past = slices.Compact(past)
			t.Logf("killed %s (partitions %v) at try %d, holding %d outputs past its commit", member, parts, try+1, len(past))
			return past
		}
		if err := d.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		select {
		case _, ok := <-progress:
			if !ok {
				t.Fatalf("%s never held an output past its commit in %d tries while the events were produced", member, try+1)
			}
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// memberPartitions returns the partitions of topic that the member of
// group with client ID member holds.
func memberPartitions(t *testing.T, adm *kadm.Client, group, topic, member string) []int32 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		r, err := adm.DescribeGroups(ctxTest(t, 5*time.Second), group)
		if err == nil && r[group].Err == nil && r[group].State == "Stable" {
			for _, m := range r[group].Members {
				if m.ClientID != member {
					continue
				}
				if a, ok := m.Assigned.AsConsumer(); ok {
					for _, at := range a.Topics {
						if at.Topic == topic && len(at.Partitions) > 0 {
							return at.Partitions
						}
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: no stable member %s holding partitions of %s", group, member, topic)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settledPast reads the offsets settled past committed that a kafkax
// commit records in its metadata ("sluice.settled.2:", "d" and how far
// the partition was delivered, then ";gap+len" ranges, as
// connect/kafkax/settled.go documents), as [lo, hi] pairs. Metadata of
// another version of that format panics: read wrong, the duplicates this
// file's tests expect would be miscounted.
func settledPast(committed int64, meta string) [][2]int64 {
	body, ok := strings.CutPrefix(meta, "sluice.settled.2:")
	if !ok {
		if strings.HasPrefix(meta, "sluice.settled.") {
			panic("kafkax's commit metadata changed format: " + meta)
		}
		return nil
	}
	_, body, _ = strings.Cut(body, ";") // the delivered mark
	if body == "" {
		return nil
	}
	var rs [][2]int64
	end := committed
	for item := range strings.SplitSeq(body, ";") {
		g, l, _ := strings.Cut(item, "+")
		gap, _ := strconv.ParseInt(g, 10, 64)
		n, _ := strconv.ParseInt(l, 10, 64)
		lo := end + gap
		rs = append(rs, [2]int64{lo, lo + n - 1})
		end = lo + n
	}
	return rs
}

func header(kr *kgo.Record, key string) string {
	for _, h := range kr.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// awaitOutputs waits until the output topics hold, committed or not, an
// enriched record of every good id and a dead letter of every dead
// input.
func awaitOutputs(t *testing.T, r *barsRun, good, dead map[string]bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ids, ats := map[string]bool{}, map[string]bool{}
		for _, kr := range readTopic(t, r.s.kafka, r.names.Out) {
			id, _, _ := strings.Cut(string(kr.Value), ",")
			ids[id] = true
		}
		for _, kr := range readTopic(t, r.s.kafka, r.names.Dead) {
			ats[header(kr, kafkax.HeaderPartition)+"/"+header(kr, kafkax.HeaderOffset)] = true
		}
		left := 0
		for id := range good {
			if !ids[id] {
				left++
			}
		}
		for at := range dead {
			if !ats[at] {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %d of the %d inputs have no output", within, left, len(good)+len(dead))
		}
		time.Sleep(time.Second)
	}
}

// readCommitted returns every record of topic (of partitions partitions)
// that a read-committed consumer sees, once nothing writes to it: it
// appends a marker record to each partition, outside any transaction, and
// reads until it has every marker — past every transaction begun before,
// which the broker has committed or aborted by then.
func readCommitted(t *testing.T, brokers, topic string, partitions int) []*kgo.Record {
	t.Helper()
	ctx := ctxTest(t, 120*time.Second)
	marker := []byte("sluice-test-end-marker")
	pr, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for p := range partitions {
		if err := pr.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: marker}).FirstErr(); err != nil {
			pr.Close()
			t.Fatalf("%s: the end marker of partition %d: %v", topic, p, err)
		}
	}
	pr.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	ended := map[int32]bool{}
	for len(ended) < partitions {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s committed: %v (the end of %d of %d partitions seen)", topic, ctx.Err(), len(ended), partitions)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == string(marker) {
				ended[r.Partition] = true
				return
			}
			recs = append(recs, r)
		})
	}
	return recs
}

// At least once: the killed member's outputs past its commit are produced
// again by the partition's next owner, so this test tells at-least-once
// from exactly-once: every input has its output, and each of those is
// duplicated. A malformed or unknown event (a poison record for the
// pipeline) is dead-lettered, at least once.
func TestKafkaServiceAtLeastOnceDuplicatesAfterASIGKILL(t *testing.T) {
	o := runKillAndBrokerRestart(t, "alo3")
	if o.missing > 0 || o.extra > 0 {
		t.Errorf("%d inputs without their output, %d outputs of no input; want none", o.missing, o.extra)
	}
	if o.pastCommitDuplicated != len(o.pastCommit) {
		t.Errorf("of the %d outputs the killed member held past its commit, %d are duplicated; at least once, all are",
			len(o.pastCommit), o.pastCommitDuplicated)
	}
	if o.duplicated == 0 {
		t.Errorf("no duplicate at all at least once after a SIGKILL past the commit")
	}
}

// Exactly once (--exactly-once): the same scenario, and every input's
// output is in the topics once for a read-committed consumer — those the
// killed member held past its commit too, produced in a transaction that
// never committed — and every malformed or unknown event (a poison record
// for the pipeline) is in the dead-letter topic once, committed in the
// transaction of its offset.
func TestKafkaServiceExactlyOnceSurvivesASIGKILLAndABrokerRestart(t *testing.T) {
	o := runKillAndBrokerRestart(t, "eos3", "--exactly-once")
	if o.missing+o.duplicated+o.extra > 0 {
		t.Errorf("%d inputs without their output, %d with more than one, %d outputs of no input; want none", o.missing, o.duplicated, o.extra)
	}
	if o.pastCommitDuplicated > 0 {
		t.Errorf("%d of the outputs the killed member held past its commit are duplicated", o.pastCommitDuplicated)
	}
	if o.dead == 0 {
		t.Errorf("no event was dead-lettered: the run did not exercise the dead-letter topic")
	}
}
