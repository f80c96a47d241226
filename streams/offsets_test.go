package streams

import (
	"math/rand/v2"
	"testing"
)

func TestOffsetTracker(t *testing.T) {
	tr := newOffsetTracker()
	for _, o := range []int64{10, 11, 13, 14, 20} { // gaps: compaction, markers
		tr.add(o)
	}
	if tr.commitPoint() != -1 || tr.window() != 5 {
		t.Fatalf("fresh tracker: point %d window %d", tr.commitPoint(), tr.window())
	}
	if tr.ack(13) || tr.ack(20) || tr.commitPoint() != -1 {
		t.Fatal("acks above an unacknowledged offset moved the commit point")
	}
	if tr.ack(99) || tr.ack(13) {
		t.Fatal("unknown or repeated ack reported a move")
	}
	if !tr.ack(10) || tr.commitPoint() != 11 {
		t.Fatalf("after 10: %d", tr.commitPoint())
	}
	if !tr.ack(11) || tr.commitPoint() != 14 {
		t.Fatalf("after 11: %d, want 14 (13 was acknowledged)", tr.commitPoint())
	}
	if tr.window() != 2 {
		t.Fatalf("window %d, want 2 (14 and 20)", tr.window())
	}
	tr.ack(14)
	if tr.commitPoint() != 21 || tr.window() != 0 {
		t.Fatalf("all acked: point %d window %d", tr.commitPoint(), tr.window())
	}
}

func TestOffsetTrackerRandom(t *testing.T) {
	tr := newOffsetTracker()
	const n = 5000
	for i := range int64(n) {
		tr.add(i * 2)
	}
	order := rand.Perm(n)
	acked := make([]bool, n)
	for _, i := range order {
		tr.ack(int64(i) * 2)
		acked[i] = true
		low := 0
		for low < n && acked[low] {
			low++
		}
		want := int64(-1)
		if low > 0 {
			want = int64(low-1)*2 + 1
		}
		if tr.commitPoint() != want {
			t.Fatalf("commit point %d, want %d", tr.commitPoint(), want)
		}
	}
}
