package netguard

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A failed connection is told in fixed words, whatever the far side said:
// a server speaking another protocol, a certificate nobody vouches for, a
// closed port, a refused address.
func TestDescribeSaysNoServerText(t *testing.T) {
	const mark = "BANNER-7f3a intranet-db-01"
	banner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer banner.Close()
	go func() {
		for {
			c, err := banner.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 " + mark + "\r\n")) //nolint:errcheck
			time.AfterFunc(200*time.Millisecond, func() { c.Close() })
		}
	}()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()

	allowed := Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }, Timeout: 2 * time.Second}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: allowed.DialContext}}
	get := func(url string) error {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	refused := &http.Client{Transport: &http.Transport{DialContext: Dialer{}.DialContext}}
	_, privErr := refused.Get("http://127.0.0.1:1/")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"another protocol", get("http://" + banner.Addr().String() + "/"), FailOther},
		{"TLS to another protocol", get("https://" + banner.Addr().String() + "/"), FailTLS},
		{"untrusted certificate", get(tlsSrv.URL), FailUntrusted},
		{"closed port", get("http://" + closedAddr + "/"), FailConnect},
		{"private address", privErr, FailPrivate},
	} {
		if tc.err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		got := Public(tc.err).Error()
		if got != tc.want || strings.Contains(got, "BANNER") {
			t.Errorf("%s: %q (cause %v), want %q", tc.name, got, tc.err, tc.want)
		}
	}
}
