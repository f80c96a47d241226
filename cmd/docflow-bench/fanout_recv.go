package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// fanoutReceiver is the local webhook receiver of the fanout section: it
// answers 204 on /hook/<n> and notes when each (path, event id) arrived
// first; /dead/<n> never answers until the receiver closes.
type fanoutReceiver struct {
	srv  *http.Server
	url  string
	stop chan struct{}

	mu    sync.Mutex
	first map[string]time.Time // path + " " + event id
	count int
}

func newFanoutReceiver() (*fanoutReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &fanoutReceiver{url: "http://" + ln.Addr().String(), stop: make(chan struct{}), first: map[string]time.Time{}}
	rc.srv = &http.Server{Handler: http.HandlerFunc(rc.serve), ReadHeaderTimeout: 10 * time.Second}
	go rc.srv.Serve(ln) //nolint:errcheck // ends with Close
	return rc, nil
}

func (rc *fanoutReceiver) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) //nolint:errcheck // the body is not checked here
	if strings.HasPrefix(r.URL.Path, "/dead/") {
		select {
		case <-r.Context().Done():
		case <-rc.stop:
		}
		return
	}
	now := time.Now()
	key := r.URL.Path + " " + r.Header.Get("webhook-id")
	rc.mu.Lock()
	if _, ok := rc.first[key]; !ok {
		rc.first[key] = now
		rc.count++
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// reset forgets what arrived.
func (rc *fanoutReceiver) reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.first, rc.count = map[string]time.Time{}, 0
}

// delivered is how many distinct deliveries arrived.
func (rc *fanoutReceiver) delivered() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.count
}

// arrivals returns when each event id arrived, per path.
func (rc *fanoutReceiver) arrivals() map[string]time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]time.Time, len(rc.first))
	for k, v := range rc.first {
		out[k] = v
	}
	return out
}

func (rc *fanoutReceiver) close() {
	close(rc.stop)
	rc.srv.Close() //nolint:errcheck // the bench ends
}
