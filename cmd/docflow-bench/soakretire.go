package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// retirer deletes the documents the soak's uploads made once they are
// keep old, so that the corpus stays the size it was seeded at: what
// grows over the soak is then what the server holds on to, not what it
// was given to keep (the embedded index holds every document's vector in
// memory, for one).
type retirer struct {
	m    *mixer
	keep time.Duration

	mu       sync.Mutex
	queue    []retiree
	deleted  int
	failed   int
	firstErr string
}

// retiree is a document an upload made, by its owner.
type retiree struct {
	at   time.Time
	user int
	id   int64
}

// add hears an upload (mixer.uploaded).
func (r *retirer) add(user int, id int64) {
	r.mu.Lock()
	r.queue = append(r.queue, retiree{at: time.Now(), user: user, id: id})
	r.mu.Unlock()
}

// run deletes, every second, the documents uploaded keep ago or earlier,
// until ctx ends or stop is closed.
func (r *retirer) run(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		n := 0
		for n < len(r.queue) && time.Since(r.queue[n].at) >= r.keep {
			n++
		}
		due := append([]retiree(nil), r.queue[:n]...)
		r.queue = r.queue[n:]
		r.mu.Unlock()
		for _, d := range due {
			r.delete(d)
		}
	}
}

// delete deletes one document as its owner.
func (r *retirer) delete(d retiree) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(fmt.Sprintf("%s/api/files/%d", r.m.url, d.id))
	req.Header.SetMethod("DELETE")
	req.Header.Set("Authorization", "Bearer "+r.m.tokens[d.user])
	err := r.m.client.DoTimeout(req, resp, 30*time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.failed++
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
	case resp.StatusCode() != fasthttp.StatusOK:
		r.failed++
		if r.firstErr == "" {
			r.firstErr = fmt.Sprintf("status %d: %.200s", resp.StatusCode(), resp.Body())
		}
	default:
		r.deleted++
	}
}

// summary says what was deleted.
func (r *retirer) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := fmt.Sprintf("%d deleted, %d failed, %d left", r.deleted, r.failed, len(r.queue))
	if r.firstErr != "" {
		s += " (first: " + r.firstErr + ")"
	}
	return s
}
