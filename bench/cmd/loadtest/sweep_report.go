package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// The sweep's HTML report: one self-contained page (inline CSS and SVG, no
// script, nothing fetched) in the benchmark lab's style: a chart of the
// stored events/s of each step against its p50 and p99 latency (consume →
// committed in ClickHouse), with a published figure for this pipeline (brokers on other machines) — 180k events/s,
// p50 40 ms, p99 120 ms — drawn as reference lines, then the table.

const (
	pubRate = 180_000
	pubP50  = 40 * time.Millisecond
	pubP99  = 120 * time.Millisecond
)

func writeSweepHTML(w io.Writer, f kafkaFlags, steps, bareSteps []sweepStep, planned int) error {
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice sweep: the highest sustainable rate</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1120px;padding:0 16px;color:#1d2330;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:36px 0 4px;border-top:1px solid #dde2ea;padding-top:18px}
.cond{color:#556;margin:0 0 8px}.sub{color:#556;margin:0 0 12px}
.fail{background:#fde8e8;border:1px solid #e0a0a0;color:#8a1c1c;padding:8px 12px;border-radius:6px;font-weight:600}
.ok{background:#e8f6ec;border:1px solid #9fd3ae;color:#1c5a2c;padding:8px 12px;border-radius:6px;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:12.5px;margin:10px 0 4px}
th,td{padding:3px 8px;border-bottom:1px solid #eef0f4;text-align:right;white-space:nowrap}
th{background:#f5f7fa;font-weight:600}
td.l,th.l{text-align:left}td.note{text-align:left;white-space:normal;color:#556;max-width:420px}
tr.failed td{background:#fde8e8;color:#8a1c1c}
svg{display:block;margin:8px 0}svg text{font:11.5px system-ui,sans-serif;fill:#1d2330}
svg .axis{stroke:#9aa3b2;stroke-width:1}svg .grid{stroke:#eef0f4;stroke-width:1}svg .muted{fill:#667}
</style></head><body>
<h1>sluice sweep: the highest sustainable rate</h1>
`)
	fmt.Fprintf(&b, "<p class=\"cond\">%s</p>\n", html.EscapeString(conditions()))
	fmt.Fprintf(&b, "<p class=\"sub\">Kafka + ClickHouse market-event pipeline; --sweep %s, a %s window per step after a %s warm-up at its rate that counts in no figure. A step passes when its window held (the generator reached 95 %% of the rate, the lag at the end is at most one second of events and did not grow over the window's last half) and p99 consume → committed in ClickHouse ≤ %s. The sweep stops at the first step that does not pass.</p>\n",
		html.EscapeString(f.sweep), f.duration, f.warmup, ms(sweepP99))
	if note := shortWindowNote(f.duration); note != "" {
		fmt.Fprintf(&b, "<p class=\"fail\">%s</p>\n", html.EscapeString(note))
	}
	if best := highest(steps); best > 0 {
		fmt.Fprintf(&b, "<p class=\"ok\">Highest sustainable rate: %d events/s (%d of %d steps run).</p>\n", best, len(steps), planned)
	} else {
		fmt.Fprintf(&b, "<p class=\"fail\">No step passed: no sustainable rate in the range (%d of %d steps run).</p>\n", len(steps), planned)
	}
	if len(bareSteps) > 0 {
		if best := highest(bareSteps); best > 0 {
			fmt.Fprintf(&b, "<p class=\"sub\">--compare, the bare hand-written loop on the same brokers (poll 500 records or 50 ms → insert → produce → commit; no decoding, no enrichment): highest rate passed %d events/s (%d steps run). Drawn dashed.</p>\n", best, len(bareSteps))
		} else {
			fmt.Fprintf(&b, "<p class=\"sub\">--compare, the bare hand-written loop on the same brokers: no step passed (%d run). Drawn dashed.</p>\n", len(bareSteps))
		}
	}
	sweepChart(&b, steps, bareSteps)
	b.WriteString("<h2>the pipeline</h2>\n")
	sweepTable(&b, steps)
	if len(bareSteps) > 0 {
		b.WriteString("<h2>the bare loop (--compare)</h2>\n")
		sweepTable(&b, bareSteps)
	}
	b.WriteString("<p class=\"sub\">A published figure for this pipeline with the brokers on other machines: 180k events/s sustained, p50 40 ms, p99 120 ms, on two vCPUs. Here the brokers may share the machine.</p>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func sweepTable(b *strings.Builder, steps []sweepStep) {
	b.WriteString("<table><tr><th>rate asked</th><th>in/s</th><th>stored/s</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>lag at end</th><th>CPU µs/event</th><th class=\"l\">held</th><th class=\"l\">pass</th><th class=\"l\">why</th></tr>\n")
	for _, s := range steps {
		cls := ""
		if !s.pass {
			cls = ` class="failed"`
		}
		fmt.Fprintf(b, "<tr%s><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%.1f</td><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"note\">%s</td></tr>\n",
			cls, s.rate, si(s.in), si(s.stored), ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max), s.lag, s.cpu, yesNo(s.held), yesNo(s.pass), html.EscapeString(s.why))
	}
	b.WriteString("</table>\n")
}

// sweepChart draws stored events/s (x) against latency (y): a p50 line and
// a p99 line through the steps, pass and fail marked, and the reference
// lines x = 180k, y = 40 ms and y = 120 ms.
func sweepChart(b *strings.Builder, steps, bareSteps []sweepStep) {
	const W, H, left, right, top, bottom = 960, 380, 70, 150, 20, 46
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	xmax, ymax := float64(pubRate), float64(pubP99.Milliseconds())
	for _, s := range append(append([]sweepStep{}, steps...), bareSteps...) {
		xmax = math.Max(xmax, s.stored)
		ymax = math.Max(ymax, s.p99.Seconds()*1e3)
	}
	xmax, ymax = niceCeil(xmax*1.08), niceCeil(ymax*1.1)
	x := func(v float64) float64 { return left + pw*v/xmax }
	y := func(v float64) float64 { return top + ph*(1-v/ymax) }
	fmt.Fprintf(b, `<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="stored events per second against latency, consume to ClickHouse">`+"\n", W, H, W, H)
	for i := 0; i <= 5; i++ {
		xv, yv := xmax*float64(i)/5, ymax*float64(i)/5
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" text-anchor="middle" class="muted">%s</text>`+"\n",
			x(xv), top, x(xv), H-bottom, x(xv), H-bottom+16, si(xv))
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end" class="muted">%.0f ms</text>`+"\n",
			left, y(yv), W-right, y(yv), left-6, y(yv)+4, yv)
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/><line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n",
		left, H-bottom, W-right, H-bottom, left, top, left, H-bottom)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">stored events/s (over the window)</text>`+"\n", left+pw/2, H-8)
	fmt.Fprintf(b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">consume → ClickHouse</text>`+"\n", top+ph/2, top+ph/2)
	// reference lines
	ref := "#8a1c1c"
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="5 4"/><text x="%.1f" y="%d" fill="%s" style="fill:%s">published 180k/s</text>`+"\n",
		x(pubRate), top, x(pubRate), H-bottom, ref, x(pubRate)+4, top+12, ref, ref)
	for _, r := range []struct {
		v     time.Duration
		label string
	}{{pubP50, "published p50 40 ms"}, {pubP99, "published p99 120 ms (pass limit)"}} {
		yv := y(r.v.Seconds() * 1e3)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="5 4"/><text x="%d" y="%.1f" style="fill:%s">%s</text>`+"\n",
			left, yv, W-right, yv, ref, W-right+4, yv+4, ref, r.label)
	}
	p50 := func(s sweepStep) time.Duration { return s.p50 }
	p99 := func(s sweepStep) time.Duration { return s.p99 }
	for _, series := range []struct {
		name, color, dash string
		steps             []sweepStep
		q                 func(sweepStep) time.Duration
	}{{"p50", "#2f6fdb", "", steps, p50}, {"p99", "#e07b1a", "", steps, p99},
		{"bare loop p50", "#2f6fdb", ` stroke-dasharray="3 3"`, bareSteps, p50}, {"bare loop p99", "#e07b1a", ` stroke-dasharray="3 3"`, bareSteps, p99}} {
		steps := series.steps
		var pts []string
		for _, s := range steps {
			if s.window <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.stored), y(series.q(s).Seconds()*1e3)))
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", series.color, series.dash, strings.Join(pts, " "))
		}
		for _, s := range steps {
			if s.window <= 0 {
				continue
			}
			px, py := x(s.stored), y(series.q(s).Seconds()*1e3)
			fill := series.color
			if !s.pass {
				fill = "#fff"
			}
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s" stroke-width="2"><title>%d events/s asked: stored %s/s, %s %s, %s</title></circle>`+"\n",
				px, py, fill, series.color, s.rate, si(s.stored), series.name, ms(series.q(s)), passWord(s.pass))
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" style="fill:#2f6fdb">● p50</text><text x="%d" y="%d" style="fill:#e07b1a">● p99</text><text x="%d" y="%d" class="muted">○ step failed</text>`+"\n",
		W-right+4, top+60, W-right+4, top+76, W-right+4, top+92)
	if len(bareSteps) > 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" class="muted">- - bare loop</text>`+"\n", W-right+4, top+108)
	}
	b.WriteString("</svg>\n")
}

func passWord(p bool) string {
	if p {
		return "passed"
	}
	return "failed"
}

// niceCeil rounds v up to 1, 2 or 5 × a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
