package netguard

import (
	"context"
	"errors"
	"net"
	"testing"
)

func TestDialRefusesInternalUnlessAllowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx := context.Background()
	for _, host := range []string{"127.0.0.1", "localhost", "::ffff:127.0.0.1", "::1", "10.0.0.1", "169.254.169.254"} {
		if _, err := (Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, port)); !errors.Is(err, ErrPrivate) {
			t.Errorf("%s: %v", host, err)
		}
	}
	d := Dialer{Allowed: func() []string { return []string{"127.0.0.1", "LOCALHOST"} }}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			t.Fatalf("%s allowed: %v", host, err)
		}
		c.Close()
	}
}

// An allow-list entry host:port admits that port only; a bare host admits
// every port; the rest stays refused.
func TestAllowListEntriesWithPorts(t *testing.T) {
	ctx := context.Background()
	listen := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		return port
	}
	open, other := listen(), listen()
	for _, tc := range []struct {
		entries []string
		port    string
		ok      bool
	}{
		{[]string{"127.0.0.1:" + open}, open, true},
		{[]string{"127.0.0.1:" + open}, other, false},
		{[]string{"localhost:" + open, "127.0.0.1:" + other}, open, false},
		{[]string{"127.0.0.1"}, other, true},
		{[]string{"[127.0.0.1]"}, open, true},
		{[]string{"127.0.0.1:" + open, "127.0.0.1"}, other, true},
	} {
		d := Dialer{Allowed: func() []string { return tc.entries }}
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", tc.port))
		if c != nil {
			c.Close()
		}
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrPrivate) {
			t.Errorf("entries %v, port %s: %v (want allowed %v)", tc.entries, tc.port, err, tc.ok)
		}
	}
	d := Dialer{Allowed: func() []string { return []string{"[::1]:" + open} }}
	if _, err := d.DialContext(ctx, "tcp", net.JoinHostPort("::1", other)); !errors.Is(err, ErrPrivate) {
		t.Errorf("[::1]:%s admitted port %s: %v", open, other, err)
	}
}
