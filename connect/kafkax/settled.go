package kafkax

import (
	"strconv"
	"strings"
)

// A commit records, in its metadata, the offsets past its settled prefix
// that are settled already (out of order), so that the partition's next
// owner — this member after a restart, or another after a rebalance —
// skips them instead of processing them again, and how far the partition
// was delivered, so that the next owner counts the records it delivers
// again ([SourceStats].Redelivered).
//
// The metadata is metaTag, then "d" and how many offsets past the
// committed one were delivered, then ranges ";gap+len" each: a range
// starts gap offsets after the end of the previous one (the first after
// the committed offset) and holds len offsets. It holds at most metaMax
// bytes: the ranges past that are left out, and their records are
// processed again by the next owner, as without the metadata.
const (
	metaTag = "sluice.settled.2:"
	// metaMax stays under the broker's offset.metadata.max.bytes
	// (default 4096), which refuses the commit of a longer one.
	metaMax = 3000
)

// offRange is the offsets lo … hi, both included.
type offRange struct{ lo, hi int64 }

// encodeSettled writes rs (ascending, disjoint, each past committed) and
// delivered (the offset after the last one delivered) as commit metadata,
// leaving out the ranges that would pass metaMax; "" when rs is empty and
// nothing past committed was delivered.
func encodeSettled(committed, delivered int64, rs []offRange) string {
	if len(rs) == 0 && delivered <= committed {
		return ""
	}
	var b strings.Builder
	b.WriteString(metaTag)
	b.WriteByte('d')
	b.WriteString(strconv.FormatInt(max(delivered-committed, 0), 10))
	end := committed
	var item []byte
	for _, r := range rs {
		item = append(item[:0], ';')
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
// committed: the ranges settled past it and the offset after the last one
// delivered (committed when the metadata says none); nil and committed for
// metadata of another kind or malformed.
func decodeSettled(committed int64, meta string) (rs []offRange, delivered int64) {
	body, ok := strings.CutPrefix(meta, metaTag)
	if !ok || committed < 0 || committed > 1<<62 {
		return nil, committed
	}
	d, body, _ := strings.Cut(body, ";")
	dn, err := strconv.ParseInt(strings.TrimPrefix(d, "d"), 10, 64)
	if !strings.HasPrefix(d, "d") || err != nil || dn < 0 || dn > 1<<62-committed {
		return nil, committed
	}
	if body == "" {
		return nil, committed + dn
	}
	end := committed
	for item := range strings.SplitSeq(body, ";") {
		g, l, ok := strings.Cut(item, "+")
		gap, err1 := strconv.ParseInt(g, 10, 64)
		n, err2 := strconv.ParseInt(l, 10, 64)
		if !ok || err1 != nil || err2 != nil || gap < 0 || n < 1 || end > 1<<62 || gap > 1<<62-end || n > 1<<62 {
			return nil, committed
		}
		lo := end + gap
		rs = append(rs, offRange{lo, lo + n - 1})
		end = lo + n
	}
	return rs, committed + dn
}

// settledPast returns the ranges of offsets settled past the settled
// prefix: runs of settled entries, then the ranges still to skip. Called
// with mu held.
func (p *partition) settledPast() []offRange {
	var rs []offRange
	in := false
	for i := range p.entries {
		e := &p.entries[i]
		switch {
		case !e.settled:
			in = false
		case in:
			rs[len(rs)-1].hi = e.rec.Offset
		default:
			rs = append(rs, offRange{e.rec.Offset, e.rec.Offset})
			in = true
		}
	}
	for _, r := range p.skip {
		if r.hi <= p.last {
			continue
		}
		r.lo = max(r.lo, p.last+1)
		if n := len(rs); in && rs[n-1].hi+1 == r.lo {
			rs[n-1].hi = r.hi // one run with the records fetched
		} else {
			rs = append(rs, r)
		}
		in = false
	}
	return rs
}
