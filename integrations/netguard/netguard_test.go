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
