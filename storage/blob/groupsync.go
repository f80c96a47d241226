package blob

import "sync"

// groupSync makes many writers' files durable with one filesystem flush:
// a writer that calls wait is released once a flush that began after its
// call has finished. While one flush runs, the writers that arrive queue
// for the next, which serves them all, so a thousand uploads a second cost
// a few hundred flushes instead of two journal commits each (file and
// directory fsync), the disk's ceiling at about a thousand new files a
// second.
type groupSync struct {
	flush func() error

	mu       sync.Mutex
	cond     *sync.Cond
	running  bool
	started  uint64 // flushes begun
	finished uint64 // flushes ended
	errGen   uint64 // the last flush that failed
	err      error
}

func newGroupSync(flush func() error) *groupSync {
	g := &groupSync{flush: flush}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait returns when everything written before the call is durable, or
// with the error of the flush that should have made it so.
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A flush running now may have begun before the caller's last write:
	// only the next one counts.
	target := g.started + 1
	for g.finished < target {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := g.flush()
		g.mu.Lock()
		g.running = false
		g.finished = gen
		if err != nil {
			g.err, g.errGen = err, gen
		}
		g.cond.Broadcast()
	}
	if g.errGen >= target {
		return g.err
	}
	return nil
}
