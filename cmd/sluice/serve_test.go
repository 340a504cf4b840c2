package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// groupMembers returns how many members group has and how many partitions
// of topic they hold.
func groupMembers(t *testing.T, adm *kadm.Client, group, topic string) (members, partitions int) {
	t.Helper()
	r, err := adm.DescribeGroups(ctxTest(t, 5*time.Second), group)
	if err != nil {
		return 0, 0
	}
	g := r[group]
	if g.Err != nil || g.State != "Stable" {
		return 0, 0
	}
	return len(g.Members), len(r.AssignedPartitions()[topic])
}

// awaitGroup waits until group is stable with members members holding
// every partition of topic.
func awaitGroup(t *testing.T, adm *kadm.Client, group, topic string, members, partitions int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m, p := groupMembers(t, adm, group, topic)
		if m == members && p == partitions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: %d members holding %d partitions of %s after %s; want %d holding %d", group, m, p, topic, within, members, partitions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Three `sluice serve` processes share the partitions while events are
// produced; one is SIGKILLed mid-stream; the other two take its
// partitions over, and every event is stored at least once: the distinct
// ids in ClickHouse are the events produced less the dead letters.
func TestKafkaServiceMembersTakeOverAKilledMembersPartitions(t *testing.T) {
	s := needServices(t)
	const partitions = 6
	names := onkafka.NamesFor("svc")
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := onkafka.ResetTopics(ctxTest(t, 30*time.Second), adm, partitions, names.Group, names.In, names.Out, names.Dead); err != nil {
		t.Fatal(err)
	}
	if err := onkafka.CreateTable(ctxTest(t, 30*time.Second), openCH(t, s.clickhouse), names.Table, true); err != nil {
		t.Fatal(err)
	}
	var members []*demoProcess
	for range 3 {
		members = append(members, startCLI(t, "serve", "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", "svc"))
	}
	awaitGroup(t, adm, names.Group, names.In, 3, partitions, 60*time.Second)

	// 16 000 events over about 8 s, in batches of 500 every 250 ms.
	produced := make(chan int64, 1)
	go func() {
		var n int64
		defer func() { produced <- n }()
		for i := 0; i < 32; i++ {
			k, err := onkafka.Produce(context.Background(), s.kafka, names.In, i*500, 500, 0.01)
			n += k
			if err != nil {
				t.Errorf("producing: %v", err)
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	members[0].await(t, storedLine) // mid-stream: the first member stores
	if err := members[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	members[0].wait(t, 10*time.Second)
	awaitGroup(t, adm, names.Group, names.In, 2, partitions, 30*time.Second)
	n := <-produced
	if n != 16000 {
		t.Fatalf("produced %d events, want 16000", n)
	}

	good, dead := expected(t, s.kafka, names.In)
	if int64(len(good)+len(dead)) != n {
		t.Fatalf("input topic: %d events, %d were produced", len(good)+len(dead), n)
	}
	db := openCH(t, s.clickhouse)
	var ids uint64
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := db.QueryRowContext(ctx, "SELECT uniqExact(id) FROM "+names.Table).Scan(&ids)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if ids >= uint64(len(good)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, d := range members[1:] {
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := d.wait(t, 60*time.Second); code != 0 {
			t.Errorf("a member exited %d after SIGTERM, want 0:\n%s", code, d.out())
		}
	}
	if ids != uint64(len(good)) {
		t.Fatalf("ClickHouse: %d distinct ids, want produced − dead letters = %d − %d = %d", ids, n, len(dead), len(good))
	}
	rows := checkStored(t, s, names, good, dead)
	t.Logf("produced %d, dead-lettered %d, %d distinct ids in %d rows (at least once: a killed member's unsettled records are stored again)",
		n, len(dead), ids, rows)
}
