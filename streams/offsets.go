package streams

// offsetTracker follows the dispatched offsets of one partition in fetch
// order and yields the commit point: one past the highest offset below which
// every dispatched message is acknowledged.
//
// NOTE: offsets are tracked as a list rather than by arithmetic because a
// partition's offsets are not always contiguous (compaction, transaction
// markers): the next dispatched offset, not offset+1, is what must be done
// before the commit point can move.
type offsetTracker struct {
	entries []trackedOffset // dispatched, not yet passed by the commit point
	head    int             // entries[:head] are passed and only await compaction
	next    int64           // commit point; -1 until the first message is passed
}

type trackedOffset struct {
	offset int64
	done   bool
}

func newOffsetTracker() *offsetTracker { return &offsetTracker{next: -1} }

// add records a dispatched offset; offsets must increase.
func (t *offsetTracker) add(offset int64) {
	t.entries = append(t.entries, trackedOffset{offset: offset})
}

// window is the number of dispatched offsets the commit point has not
// passed yet (acknowledged or not): the partition's in-flight budget use.
func (t *offsetTracker) window() int { return len(t.entries) - t.head }

// ack marks offset done and reports whether the commit point moved.
func (t *offsetTracker) ack(offset int64) bool {
	live := t.entries[t.head:]
	lo, hi := 0, len(live)
	for lo < hi {
		mid := (lo + hi) / 2
		if live[mid].offset < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(live) || live[lo].offset != offset || live[lo].done {
		return false
	}
	live[lo].done = true
	moved := false
	for t.head < len(t.entries) && t.entries[t.head].done {
		t.next = t.entries[t.head].offset + 1
		t.head++
		moved = true
	}
	if t.head > 0 && t.head >= len(t.entries)/2 {
		n := copy(t.entries, t.entries[t.head:])
		clear(t.entries[n:])
		t.entries = t.entries[:n]
		t.head = 0
	}
	return moved
}

// commitPoint is the offset to commit (the next one to consume), or -1.
func (t *offsetTracker) commitPoint() int64 { return t.next }
