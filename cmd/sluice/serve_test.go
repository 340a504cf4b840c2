package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

// Three `demo --serve` processes share the partitions while a generator
// produces; one is SIGKILLed mid-stream; the other two take its
// partitions over, and every event is stored at least once: the distinct
// ids in ClickHouse are the events produced less the dead letters.
func TestKafkaServiceMembersTakeOverAKilledMembersPartitions(t *testing.T) {
	s := needServices(t)
	const partitions = 6
	names := namesFor("svc")
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := resetKafka(ctxTest(t, 30*time.Second), adm, partitions, names.group, names.in, names.out, names.dead); err != nil {
		t.Fatal(err)
	}
	if err := createTable(ctxTest(t, 30*time.Second), openCH(t, s.clickhouse), names.table, true); err != nil {
		t.Fatal(err)
	}
	var members []*demoProcess
	for range 3 {
		members = append(members, startDemo(t, "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", "svc", "--serve"))
	}
	awaitGroup(t, adm, names.group, names.in, 3, partitions, 60*time.Second)

	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(bin, "gen", "--kafka", s.kafka, "--topic", names.in, "--rate", "2000", "--duration", "8s", "--quiet")
	var genOut strings.Builder
	gen.Stdout = &genOut
	if err := gen.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if gen.ProcessState == nil {
			gen.Process.Kill()
			gen.Wait()
		}
	})
	members[0].await(t, storedLine) // mid-stream: the first member stores
	if err := members[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	members[0].wait(t, 10*time.Second)
	awaitGroup(t, adm, names.group, names.in, 2, partitions, 30*time.Second)
	if err := gen.Wait(); err != nil {
		t.Fatalf("generator: %v\n%s", err, genOut.String())
	}
	m := genLine.FindStringSubmatch(strings.TrimSpace(genOut.String()))
	if m == nil {
		t.Fatalf("generator printed no summary: %q", genOut.String())
	}
	produced, _ := strconv.ParseInt(m[1], 10, 64)

	good, dead := expected(t, s.kafka, names.in)
	if int64(len(good)+len(dead)) != produced {
		t.Fatalf("input topic: %d events, the generator produced %d", len(good)+len(dead), produced)
	}
	db := openCH(t, s.clickhouse)
	var ids uint64
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := db.QueryRowContext(ctx, "SELECT uniqExact(id) FROM "+names.table).Scan(&ids)
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
		t.Fatalf("ClickHouse: %d distinct ids, want produced − dead letters = %d − %d = %d", ids, produced, len(dead), len(good))
	}
	rows := checkStored(t, s, names, good, dead)
	t.Logf("produced %d, dead-lettered %d, %d distinct ids in %d rows (at least once: a killed member's unsettled records are stored again)",
		produced, len(dead), ids, rows)
}
