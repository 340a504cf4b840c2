package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// count writes n compactly: 950, 10k, 1.5M.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 1000 && n%100 == 0:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + "k"
	}
	return strconv.Itoa(n)
}

// bytesText writes a size in bytes: 64 KiB, 40 MiB.
func bytesText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// nsText writes a duration in ns with three significant digits.
func nsText(ns float64) string {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return "—"
	case ns < 10:
		return fmt.Sprintf("%.2f", ns)
	case ns < 100:
		return fmt.Sprintf("%.1f", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.0f", ns)
	}
	return strings.Replace(fmt.Sprintf("%.3g", ns), "e+0", "e", 1) // 1.31e6

}

// rateText writes items per second: 12.3M, 850k.
func rateText(v float64) string {
	switch {
	case v <= 0 || math.IsNaN(v):
		return "—"
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func allocText(p *float64) string {
	if p == nil {
		return "—"
	}
	switch v := *p; {
	case v == 0:
		return "0"
	case v < 0.01:
		return fmt.Sprintf("%.4f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func speedupText(r Row) string {
	switch {
	case r.Speedup == nil:
		return "—"
	case r.Baseline:
		return "1 (base)"
	case *r.Speedup >= 10:
		return fmt.Sprintf("%.0f×", *r.Speedup)
	case *r.Speedup >= 0.1:
		return fmt.Sprintf("%.2f×", *r.Speedup)
	}
	return fmt.Sprintf("%.4f×", *r.Speedup)
}

func metricText(r Row, c Column) string {
	v, ok := r.Metrics[c.Key]
	if !ok || math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf(c.Format, v)
}

// statusText is the status and note of a row that did not run normally.
func statusText(r Row) string {
	if r.Status == statusOK {
		return r.Note
	}
	return r.Status + ": " + r.Note
}

// cells are a row's table cells, in header order.
func cells(e *Experiment, r Row) []string {
	out := []string{r.Group, r.Variant}
	if r.Status != statusOK {
		out = append(out, "—", "—", "—", "—", "—")
		for range e.Columns {
			out = append(out, "—")
		}
		return append(out, statusText(r))
	}
	out = append(out, nsText(r.NsPerItem), nsText(r.NsMin)+"–"+nsText(r.NsMax), rateText(r.ItemsPerSec),
		allocText(r.Allocs), speedupText(r))
	for _, c := range e.Columns {
		out = append(out, metricText(r, c))
	}
	return append(out, statusText(r))
}

func headers(e *Experiment) []string {
	u := e.Unit
	h := []string{"group", "variant", "ns/" + u, "min–max", u + "s/s", "allocs/" + u, "speed-up"}
	for _, c := range e.Columns {
		h = append(h, c.Header)
	}
	return append(h, "note")
}

func experimentHeading(e *Experiment) string {
	return fmt.Sprintf("%s — seed %s: %s", e.Name, e.Seed, e.Title)
}

// WriteText writes a table per experiment and the conditions line.
func WriteText(w io.Writer, res *Result) error {
	fmt.Fprintf(w, "conditions: %s\n", res.Conditions)
	fmt.Fprintf(w, "median over the runs [min–max]; speed-up = the group's baseline ns per item ÷ the row's (>1 is faster)\n")
	for _, e := range res.Experiments {
		rows := res.rowsOf(e.Name)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n== %s\n", experimentHeading(e))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(headers(e), "\t"))
		prev := ""
		for _, r := range rows {
			c := cells(e, r)
			if c[0] == prev {
				c[0] = ""
			} else {
				prev = c[0]
			}
			fmt.Fprintln(tw, strings.Join(c, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if res.Failed() {
		fmt.Fprintln(w, "\nFAILED: some variants computed a wrong answer, failed or hung (see the rows marked FAILED)")
	}
	return nil
}

// WriteMarkdown writes the same tables as Markdown.
func WriteMarkdown(w io.Writer, res *Result) error {
	fmt.Fprintf(w, "Conditions: %s. Median of the runs, [min–max]; speed-up is the group's baseline ns per item divided by the row's.\n", mdEscape(res.Conditions.String()))
	for _, e := range res.Experiments {
		rows := res.rowsOf(e.Name)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n### %s\n\n", mdEscape(experimentHeading(e)))
		h := headers(e)
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(h, " | "), strings.Repeat(" --- |", len(h)))
		for _, r := range rows {
			c := cells(e, r)
			for i := range c {
				c[i] = mdEscape(c[i])
			}
			if r.Baseline {
				c[1] = "**" + c[1] + "**"
			}
			if r.failed() {
				c[len(c)-1] = "**" + c[len(c)-1] + "**"
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(c, " | "))
		}
	}
	if res.Failed() {
		fmt.Fprintln(w, "\n**FAILED**: some variants computed a wrong answer, failed or hung.")
	}
	return nil
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// WriteJSON writes one JSON object per row, one per line.
func WriteJSON(w io.Writer, res *Result) error {
	enc := json.NewEncoder(w)
	for _, r := range res.Rows {
		r.Metrics = finiteMetrics(r.Metrics)
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// finiteMetrics drops NaN and infinite figures, which JSON cannot carry.
func finiteMetrics(m Metrics) Metrics {
	if m == nil {
		return nil
	}
	out := Metrics{}
	for k, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[k] = v
		}
	}
	return out
}
