package sluice

import (
	"fmt"
	"reflect"
)

// AttachConnector makes the counts of a broker connector part of the
// figures of the stage named name: every snapshot's [StageStats] of that
// stage carries what stats returns, in its Connector field, so that
// whatever shows p's snapshots — Prometheus, OpenTelemetry, the live page —
// shows the connector's counts beside the stage's. A connector's stage
// constructor calls it (kafkax.Read, kafkax.Produce, …); a program seldom
// needs to.
//
// conn is the connector itself (its *Source or *Sink), which tells
// connectors apart: the counts are the connector's totals, so one that
// several stages of p share is attached once, to the first of them, and
// attaching it again does nothing (a pipeline's series then sum to the
// connector's totals). stats is called once per snapshot, with the
// pipeline's snapshot lock held: it must be cheap (a few atomic loads),
// must not block, and must not call p's Stats. It returns the connector's
// own statistics value (kafkax.SourceStats, say): the metrics package
// reads the fields of the types connectors register with it. It panics if
// conn is nil or not comparable, stats is nil, or p has no stage named
// name.
func (p *Pipeline) AttachConnector(name string, conn any, stats func() any) {
	p.mustBeMade(fmt.Sprintf("AttachConnector %q", name))
	switch {
	case conn == nil || !reflect.TypeOf(conn).Comparable():
		panic(fmt.Sprintf("sluice: AttachConnector %q: the connector must be a comparable value (its pointer), got %T", name, conn))
	case stats == nil:
		panic(fmt.Sprintf("sluice: AttachConnector %q: nil stats function", name))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var to *stage
	for _, s := range p.stages {
		if s.conn == conn {
			return
		}
		if s.name == name {
			to = s
		}
	}
	if to == nil {
		panic(fmt.Sprintf("sluice: AttachConnector: pipeline %q has no stage named %q", p.name, name))
	}
	to.conn, to.connStats = conn, stats
}
