package sluice

// How a Window stage's router learns of source partitions: from the items,
// and from sources that list theirs (PartitionLister).

import (
	"fmt"
	"math"
	"time"
)

// listEvery is how often a Window's router asks a PartitionLister.
const listEvery = int64(100 * time.Millisecond)

// newPart adds partition pk to the watermark.
func (r *windowRouter[T, K, A]) newPart(pk partKey) *part {
	pt := &part{max: math.MinInt64, seen: nowNs(), settler: pk.to, id: pk.id}
	switch pp, ok := pk.to.(Partitioned); {
	case ok:
		pt.name = pp.PartitionName(pk.id)
	case pk.to != nil:
		pt.name = fmt.Sprintf("%T", pk.to)
	default:
		pt.name = "input"
	}
	r.parts[pk] = pt
	r.list = append(r.list, pt)
	r.ws.parts.Store(int64(len(r.list)))
	r.minP = nil
	if pk.to != nil {
		r.watchRevokes(pk.to)
	}
	if pl, ok := pk.to.(PartitionLister); ok && r.listers[pk.to] == nil {
		r.listers[pk.to] = pl
		r.list0(pk.to, pl)
	}
	return pt
}

// list0 makes the partitions of source to those pl lists now: new ones
// hold the watermark until they send (or idle), gone ones no longer do.
func (r *windowRouter[T, K, A]) list0(to Settler, pl PartitionLister) {
	ids := pl.Partitions()
	now := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		now[id] = true
		if r.parts[partKey{to, id}] == nil {
			r.newPart(partKey{to, id})
		}
	}
	if len(ids) > 0 {
		r.removeParts(func(pt *part) bool { return pt.settler == to && !now[pt.id] })
	}
	r.recompute()
}

// relist asks the sources that list their partitions again, every
// listEvery.
func (r *windowRouter[T, K, A]) relist() {
	if len(r.listers) == 0 || r.now-r.listed < listEvery {
		return
	}
	r.listed = r.now
	for to, pl := range r.listers {
		r.list0(to, pl)
	}
}
