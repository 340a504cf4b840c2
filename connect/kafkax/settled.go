package kafkax

import (
	"strconv"
	"strings"
)

// A commit records, in its metadata, the offsets past its settled prefix
// that are settled already (out of order), so that the partition's next
// owner — this member after a restart, or another after a rebalance —
// skips them instead of processing them again.
//
// The metadata is metaTag followed by ranges "gap+len" joined by ",": a
// range starts gap offsets after the end of the previous one (the first
// after the committed offset) and holds len offsets. It holds at most
// metaMax bytes: the ranges past that are left out, and their records are
// processed again by the next owner, as without the metadata.
const (
	metaTag = "sluice.settled.1:"
	// metaMax stays under the broker's offset.metadata.max.bytes
	// (default 4096), which refuses the commit of a longer one.
	metaMax = 3000
)

// offRange is the offsets lo … hi, both included.
type offRange struct{ lo, hi int64 }

// encodeSettled writes rs (ascending, disjoint, each past committed) as
// commit metadata, leaving out the ranges that would pass metaMax; "" when
// rs is empty.
func encodeSettled(committed int64, rs []offRange) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(metaTag)
	end := committed
	for i, r := range rs {
		var item []byte
		if i > 0 {
			item = append(item, ',')
		}
		item = strconv.AppendInt(item, r.lo-end, 10)
		item = append(item, '+')
		item = strconv.AppendInt(item, r.hi-r.lo+1, 10)
		if b.Len()+len(item) > metaMax {
			break
		}
		b.Write(item)
		end = r.hi + 1
	}
	return b.String()
}

// decodeSettled reads metadata written by encodeSettled for a commit at
// committed; nil for metadata of another kind or malformed.
func decodeSettled(committed int64, meta string) []offRange {
	body, ok := strings.CutPrefix(meta, metaTag)
	if !ok || body == "" || committed < 0 {
		return nil
	}
	var rs []offRange
	end := committed
	for item := range strings.SplitSeq(body, ",") {
		g, l, ok := strings.Cut(item, "+")
		gap, err1 := strconv.ParseInt(g, 10, 64)
		n, err2 := strconv.ParseInt(l, 10, 64)
		if !ok || err1 != nil || err2 != nil || gap < 0 || n < 1 || end > 1<<62 || gap > 1<<62-end || n > 1<<62 {
			return nil
		}
		lo := end + gap
		rs = append(rs, offRange{lo, lo + n - 1})
		end = lo + n
	}
	return rs
}
