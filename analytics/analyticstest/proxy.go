package analyticstest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy between a recorder and its store, so a test can cut
// the network without stopping a shared server.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	state   proxyState
	resumed chan struct{} // closed when a stall ends
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

type proxyState int

const (
	flowing proxyState = iota
	broken             // connections refused and closed
	stalled            // connections accepted, no bytes forwarded
	deaf               // requests forwarded, answers held
)

// NewProxy listens on a free loopback port and forwards to target
// ("host:port"). It is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the address to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Break closes every connection and refuses new ones until Restore: a
// store that is down.
func (p *Proxy) Break() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endStall()
	p.state = broken
	p.closeConns()
}

// Stall keeps connections open but forwards nothing until Restore: a store
// that hangs.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != stalled {
		p.state = stalled
		p.resumed = make(chan struct{})
	}
}

// Deafen forwards what the client sends but, on a connection that has sent
// a large request (over muteAfter bytes in one read: a write's data rather
// than a handshake or a ping), holds the server's answers until Restore,
// which discards them: a write that lands while its answer is lost (the
// client times out, then retries).
func (p *Proxy) Deafen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed == nil {
		p.resumed = make(chan struct{})
	}
	p.state = deaf
}

// Restore lets connections through again. Connections open during the
// outage are closed, and bytes held during a stall are discarded, as a
// network that was really down would have lost them.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeConns()
	p.state = flowing
	p.endStall()
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.endStall()
	p.closeConns()
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) endStall() {
	if p.resumed != nil {
		close(p.resumed)
		p.resumed = nil
	}
}

func (p *Proxy) closeConns() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.state == broken {
			p.mu.Unlock()
			client.Close()
			continue
		}
		p.mu.Unlock()
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		if p.state == broken {
			p.mu.Unlock()
			client.Close()
			server.Close()
			continue
		}
		p.conns[client] = struct{}{}
		p.conns[server] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		muted := new(atomic.Bool)
		go p.pipe(server, client, false, muted)
		go p.pipe(client, server, true, muted)
	}
}

// pipe copies src to dst, holding each chunk while the proxy is stalled
// (and, for the server's answers, while it is deaf).
func (p *Proxy) pipe(dst, src net.Conn, answers bool, muted *atomic.Bool) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !answers && n > muteAfter && p.isDeaf() {
				muted.Store(true)
			}
			if !p.waitFlowing(src, answers && muted.Load()) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or closed: either way this direction is done
			return
		}
	}
}

// muteAfter is the size of a read that Deafen takes for a write's data.
const muteAfter = 2048

func (p *Proxy) isDeaf() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == deaf
}

// waitFlowing blocks while stalled, or while deaf for held answers; it reports
// false when c was closed meanwhile (Restore discards held bytes by closing
// their connection).
func (p *Proxy) waitFlowing(c net.Conn, hold bool) bool {
	p.mu.Lock()
	resumed := p.resumed
	if p.state == deaf && !hold {
		resumed = nil
	}
	p.mu.Unlock()
	if resumed != nil {
		<-resumed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, open := p.conns[c]
	return open
}
