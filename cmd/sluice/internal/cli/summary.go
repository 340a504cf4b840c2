package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/sluicehq/sluice"
)

// Reasons lists dead letters by reason, most frequent first: ": bad
// price 405, unknown symbol 390", or "".
func Reasons(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return ": " + strings.Join(parts, ", ")
}

// PrintStages writes where the pipeline's time went, stage by stage.
func PrintStages(w io.Writer, s sluice.Snapshot) {
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(t, "  stage          \tworkers\tin\tout\tfailed\tbusy\twaiting\t")
	for _, st := range s.Stages {
		fmt.Fprintf(t, "  %-15s\t%d\t%d\t%d\t%d\t%.2fs\t%.2fs\t\n", st.Name, st.Workers, st.In, st.Out, st.Failed, st.Busy.Seconds(), st.Blocked.Seconds())
	}
	t.Flush()
	fmt.Fprintln(w, "  (busy: time the stage's workers spent in its function; waiting: time they waited for input or for room downstream; both summed over the workers)")
}
