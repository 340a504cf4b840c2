package sluice

import "fmt"

// AttachConnector makes the counts of a broker connector part of the
// figures of the stage named stage: every snapshot's [StageStats] of that
// stage carries what stats returns, in its Connector field, so that
// whatever shows p's snapshots — Prometheus, OpenTelemetry, the live page —
// shows the connector's counts beside the stage's. A connector's stage
// constructor calls it (kafkax.Read, kafkax.Produce, …); a program seldom
// needs to.
//
// stats is called once per snapshot, with the pipeline's snapshot lock
// held: it must be cheap (a few atomic loads), must not block, and must
// not call p's Stats. It returns the connector's own statistics value
// (kafkax.SourceStats, say): the metrics package reads the fields of the
// types connectors register with it. Attaching again to one stage
// replaces what it reported. It panics if stats is nil or p has no stage
// named stage.
func (p *Pipeline) AttachConnector(stage string, stats func() any) {
	p.mustBeMade(fmt.Sprintf("AttachConnector %q", stage))
	if stats == nil {
		panic(fmt.Sprintf("sluice: AttachConnector %q: nil stats function", stage))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.stages {
		if s.name == stage {
			s.connector = stats
			return
		}
	}
	panic(fmt.Sprintf("sluice: AttachConnector: pipeline %q has no stage named %q", p.name, stage))
}
