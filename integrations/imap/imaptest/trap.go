package imaptest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// Trap is a raw TCP server standing in for a hostile or foreign server:
// it greets every connection with Banner, refuses every login with
// Refusal (both texts of its own choosing, for tests that check none of
// it reaches a user), and records every line clients send, so a test can
// tell whether a password arrived.
type Trap struct {
	Addr string

	mu    sync.Mutex
	conns int
	lines []string
}

// Trap texts: a test looks for TrapMark in what users see.
const (
	TrapMark        = "TRAPBANNER-7f3a"
	TrapIMAPBanner  = "* OK [CAPABILITY IMAP4rev1] " + TrapMark + " mail server v9.9 ready"
	TrapIMAPRefusal = "NO [AUTHENTICATIONFAILED] " + TrapMark + " says: no such user on host intranet-db-01"
)

// StartTrap listens on addr (host:port; port 0 picks one) until the test
// ends. banner is the greeting line (TrapIMAPBanner for an IMAP server
// that refuses logins; anything else, "SSH-2.0-…", for a server that
// speaks another protocol: then every line is answered with the banner).
func StartTrap(t testing.TB, addr, banner string) *Trap {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trap{Addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	imapLike := strings.HasPrefix(banner, "* ")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.mu.Lock()
			tr.conns++
			tr.mu.Unlock()
			go tr.serve(c, banner, imapLike)
		}
	}()
	return tr
}

func (tr *Trap) serve(c net.Conn, banner string, imapLike bool) {
	defer c.Close()
	if _, err := c.Write([]byte(banner + "\r\n")); err != nil {
		return
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			tr.mu.Lock()
			tr.lines = append(tr.lines, strings.TrimRight(line, "\r\n"))
			tr.mu.Unlock()
		}
		if err != nil {
			return
		}
		if !imapLike {
			c.Write([]byte(banner + "\r\n")) //nolint:errcheck
			continue
		}
		tag, cmd, _ := strings.Cut(strings.TrimSpace(line), " ")
		verb, _, _ := strings.Cut(cmd, " ")
		var answer string
		switch strings.ToUpper(verb) {
		case "CAPABILITY":
			answer = "* CAPABILITY IMAP4rev1\r\n" + tag + " OK " + TrapMark + " capabilities\r\n"
		case "LOGOUT":
			c.Write([]byte("* BYE " + TrapMark + "\r\n" + tag + " OK bye\r\n")) //nolint:errcheck
			return
		case "LOGIN", "AUTHENTICATE":
			answer = tag + " " + TrapIMAPRefusal + "\r\n"
		default:
			answer = tag + " BAD " + TrapMark + " does not know " + verb + "\r\n"
		}
		if _, err := c.Write([]byte(answer)); err != nil {
			return
		}
	}
}

// Connections counts the connections accepted so far.
func (tr *Trap) Connections() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.conns
}

// Received reports whether any line a client sent contains s (a
// password, a user name).
func (tr *Trap) Received(s string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, l := range tr.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
