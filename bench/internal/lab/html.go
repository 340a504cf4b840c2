package lab

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteHTML writes one self-contained page: inline CSS and SVG, no script,
// nothing fetched. Each experiment gets a chart and its table: bars of the
// cost per item of every variant, per group, or for fan-in one line per
// variant over the number of sources.
func WriteHTML(w io.Writer, res *Result) error {
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice benchmark lab</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1120px;padding:0 16px;color:#1d2330;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:36px 0 4px;border-top:1px solid #dde2ea;padding-top:18px}
.cond{color:#556;margin:0 0 8px}.sub{color:#556;margin:0 0 12px}
.fail{background:#fde8e8;border:1px solid #e0a0a0;color:#8a1c1c;padding:8px 12px;border-radius:6px;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:12.5px;margin:10px 0 4px}
th,td{padding:3px 8px;border-bottom:1px solid #eef0f4;text-align:right;white-space:nowrap}
th{background:#f5f7fa;font-weight:600}
td.l,th.l{text-align:left}td.note{text-align:left;white-space:normal;color:#556;max-width:420px}
tr.base td{background:#f8f9fb}tr.failed td{background:#fde8e8;color:#8a1c1c}tr.skipped td{color:#8a8f99}
tr.sep td{border-top:2px solid #dde2ea}
svg{display:block;margin:8px 0}svg text{font:11.5px system-ui,sans-serif;fill:#1d2330}
svg .axis{stroke:#9aa3b2;stroke-width:1}svg .grid{stroke:#eef0f4;stroke-width:1}svg .muted{fill:#667}
</style></head><body>
<h1>sluice benchmark lab</h1>
`)
	fmt.Fprintf(&b, "<p class=\"cond\">%s</p>\n", html.EscapeString(res.Conditions.String()))
	b.WriteString(`<p class="sub">Median of the runs, with min–max; speed-up is the group's baseline ns per item divided by the row's (above 1 is faster). Every variant's answer was checked.</p>` + "\n")
	if res.Failed() {
		b.WriteString(`<p class="fail">FAILED: some variants computed a wrong answer, failed or hung — see the red rows.</p>` + "\n")
	}
	for _, e := range res.Experiments {
		rows := res.rowsOf(e.Name)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "<h2 id=\"%s\">%s</h2>\n<p class=\"sub\">seed %s: %s</p>\n",
			html.EscapeString(e.Name), html.EscapeString(e.Name), html.EscapeString(e.Seed), html.EscapeString(e.Title))
		colors := variantColors(rows)
		if e.Lines {
			var series []string
			for _, r := range rows {
				if !slices.Contains(series, r.Series) {
					series = append(series, r.Series)
				}
			}
			for _, s := range series {
				var sr []Row
				for _, r := range rows {
					if r.Series == s {
						sr = append(sr, r)
					}
				}
				lineChart(&b, e, s, sr, colors)
			}
		} else {
			barChart(&b, e, rows, colors, nil)
		}
		for _, c := range e.Charts {
			barChart(&b, e, rows, colors, &c)
		}
		if e.Draw != nil {
			e.Draw(&b, rows)
		}
		htmlTable(&b, e, rows)
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var palette = []string{"#8a94a6", "#2f6fdf", "#e07b22", "#2aa198", "#c2417c", "#7a5cc7", "#5b9b2f", "#c9a227", "#444c5c", "#d64545"}

// variantColors gives every variant of an experiment its colour: the
// baseline grey, variants named sluice blue, the others in turn.
func variantColors(rows []Row) map[string]string {
	colors := map[string]string{}
	next := 2
	for _, r := range rows {
		if _, ok := colors[r.Variant]; ok {
			continue
		}
		switch {
		case r.Baseline:
			colors[r.Variant] = palette[0]
		case strings.Contains(strings.ToLower(r.Variant), "sluice"):
			colors[r.Variant] = palette[1]
		default:
			colors[r.Variant] = palette[next%len(palette)]
			if next++; next%len(palette) < 2 {
				next += 2
			}
		}
	}
	return colors
}

func okRows(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Status == statusOK && r.NsPerItem > 0 {
			out = append(out, r)
		}
	}
	return out
}

// scale maps a cost per item to [0, 1]: logarithmic when the costs span
// more than 30×, so that one very slow variant does not flatten the rest.
type scale struct {
	lo, hi float64
	log    bool
}

func newScale(vals []float64) scale {
	lo, hi := slices.Min(vals), slices.Max(vals)
	if hi/lo > 30 {
		return scale{lo: math.Log10(lo) - 0.3, hi: math.Log10(hi), log: true}
	}
	return scale{lo: 0, hi: hi}
}

func (s scale) at(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	if s.hi == s.lo {
		return 1
	}
	return math.Max(0.01, (v-s.lo)/(s.hi-s.lo))
}

// barChart draws a bar per ok row, grouped: the cost per item, or the
// figure of column c.
func barChart(b *strings.Builder, e *Experiment, rows []Row, colors map[string]string, c *Column) {
	value := func(r Row) float64 { return r.NsPerItem }
	label := func(r Row) string { return nsText(r.NsPerItem) + " ns · " + speedupText(r) }
	title := fmt.Sprintf("ns per %s, median", e.Unit)
	if c != nil {
		value = func(r Row) float64 { return r.Metrics[c.Key] }
		label = func(r Row) string { return metricText(r, *c) + " " + c.Header }
		title = c.Header + ", median"
	}
	var ok []Row
	for _, r := range okRows(rows) {
		if v := value(r); v > 0 && !math.IsNaN(v) {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return
	}
	vals := make([]float64, len(ok))
	for i, r := range ok {
		vals[i] = value(r)
	}
	sc := newScale(vals)
	const width, labelW, barH, gap = 1080, 330, 16, 4
	plotW := width - labelW - 150
	var groups []string
	for _, r := range ok {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}
	height := 28 + len(groups)*24 + len(ok)*(barH+gap)
	fmt.Fprintf(b, `<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s: %s">`+"\n",
		width, height, width, height, html.EscapeString(e.Name), html.EscapeString(title))
	scaleNote := "linear scale"
	if sc.log {
		scaleNote = "log scale"
	}
	fmt.Fprintf(b, `<text x="0" y="14" class="muted">%s (%s; shorter is better)</text>`+"\n", html.EscapeString(title), scaleNote)
	y := 28
	for _, g := range groups {
		fmt.Fprintf(b, `<text x="0" y="%d" font-weight="600">%s</text>`+"\n", y+14, html.EscapeString(g))
		y += 24
		for _, r := range ok {
			if r.Group != g {
				continue
			}
			w := sc.at(value(r)) * float64(plotW)
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelW-8, y+barH-4, html.EscapeString(trimLabel(r.Variant, 46)))
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" rx="2" fill="%s"><title>%s: %s</title></rect>`,
				labelW, y, w, barH, colors[r.Variant], html.EscapeString(r.Variant), html.EscapeString(label(r)))
			fmt.Fprintf(b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(labelW)+w+6, y+barH-4, html.EscapeString(label(r)))
			y += barH + gap
		}
	}
	b.WriteString("</svg>\n")
}

// durText writes a power-of-ten duration in ns for an axis: 100 ns, 1 µs.
func durText(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%g µs", ns/1e3)
	}
	return fmt.Sprintf("%g ns", ns)
}

func trimLabel(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// lineChart draws one line per variant: ns per item (log) over X (log).
func lineChart(b *strings.Builder, e *Experiment, series string, rows []Row, colors map[string]string) {
	ok := okRows(rows)
	if len(ok) == 0 {
		return
	}
	var xs []float64
	var variants []string
	vals := make([]float64, len(ok))
	for i, r := range ok {
		if !slices.Contains(xs, r.X) {
			xs = append(xs, r.X)
		}
		if !slices.Contains(variants, r.Variant) {
			variants = append(variants, r.Variant)
		}
		vals[i] = r.NsPerItem
	}
	slices.Sort(xs)
	const width, height, left, right, top, bottom = 1080, 340, 70, 330, 30, 46
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	ylo, yhi := math.Floor(math.Log10(slices.Min(vals))), math.Ceil(math.Log10(slices.Max(vals)))
	if yhi == ylo {
		yhi++
	}
	xlo, xhi := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
	px := func(x float64) float64 {
		if xhi == xlo {
			return float64(left) + pw/2
		}
		return float64(left) + (math.Log10(x)-xlo)/(xhi-xlo)*pw
	}
	py := func(v float64) float64 { return float64(top) + (1-(math.Log10(v)-ylo)/(yhi-ylo))*ph }
	fmt.Fprintf(b, `<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s %s">`+"\n",
		width, height, width, height, html.EscapeString(e.Name), html.EscapeString(series))
	fmt.Fprintf(b, `<text x="0" y="16" font-weight="600">%s — ns per %s (log) over %s (log); lower is faster</text>`+"\n",
		html.EscapeString(series), html.EscapeString(e.Unit), html.EscapeString(e.XLabel))
	for d := ylo; d <= yhi; d++ {
		y := py(math.Pow(10, d))
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%.0f" y1="%.1f" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end" class="muted">%s</text>`+"\n",
			left, float64(left)+pw, y, y, left-6, y+4, durText(math.Pow(10, d)))
	}
	for _, x := range xs {
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%.0f"/><text x="%.1f" y="%.0f" text-anchor="middle" class="muted">%s</text>`+"\n",
			px(x), px(x), top, float64(top)+ph, px(x), float64(top)+ph+16, count(int(x)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%.0f"/><line class="axis" x1="%d" x2="%.0f" y1="%.0f" y2="%.0f"/>`+"\n",
		left, left, top, float64(top)+ph, left, float64(left)+pw, float64(top)+ph, float64(top)+ph)
	fmt.Fprintf(b, `<text x="%.0f" y="%d" text-anchor="middle" class="muted">%s</text>`+"\n", float64(left)+pw/2, height-8, html.EscapeString(e.XLabel))
	for i, v := range variants {
		var pts []string
		var dots strings.Builder
		for _, r := range ok {
			if r.Variant != v {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(r.X), py(r.NsPerItem)))
			fmt.Fprintf(&dots, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, %s %s: %s ns/%s</title></circle>`,
				px(r.X), py(r.NsPerItem), colors[v], html.EscapeString(v), count(int(r.X)), html.EscapeString(e.XLabel), nsText(r.NsPerItem), html.EscapeString(e.Unit))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>%s`+"\n", colors[v], strings.Join(pts, " "), dots.String())
		ly := top + 8 + i*20
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s</text>`+"\n",
			width-right+16, width-right+36, ly, ly, colors[v], width-right+42, ly+4, html.EscapeString(trimLabel(v, 40)))
	}
	b.WriteString("</svg>\n")
}

func htmlTable(b *strings.Builder, e *Experiment, rows []Row) {
	b.WriteString("<table><thead><tr>")
	for i, h := range headers(e) {
		cls := ""
		if i < 2 || i == len(headers(e))-1 {
			cls = ` class="l"`
		}
		fmt.Fprintf(b, "<th%s>%s</th>", cls, html.EscapeString(h))
	}
	b.WriteString("</tr></thead><tbody>\n")
	prev := ""
	for _, r := range rows {
		var cls []string
		if r.Baseline {
			cls = append(cls, "base")
		}
		switch r.Status {
		case statusFailed:
			cls = append(cls, "failed")
		case statusSkipped:
			cls = append(cls, "skipped")
		}
		c := cells(e, r)
		if c[0] == prev {
			c[0] = ""
		} else {
			if prev != "" {
				cls = append(cls, "sep")
			}
			prev = c[0]
		}
		fmt.Fprintf(b, `<tr class="%s">`, strings.Join(cls, " "))
		for i, v := range c {
			switch {
			case i < 2:
				fmt.Fprintf(b, `<td class="l">%s</td>`, html.EscapeString(v))
			case i == len(c)-1:
				fmt.Fprintf(b, `<td class="note">%s</td>`, html.EscapeString(v))
			default:
				fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(v))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
}
