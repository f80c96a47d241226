package ftp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/ftp"
	"docflow/internal/netguard"
	"docflow/internal/testsupport/vsftpd"
)

var allowLoopback = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }, Timeout: 5 * time.Second}

func integration(s *vsftpd.Server, path string, creds map[string]string) *docflow.Integration {
	if creds == nil {
		creds = map[string]string{"username": s.User.Name, "password": s.User.Password}
	}
	cfg := map[string]any{"host": s.Host, "port": float64(s.Port), "path": path, "tls": "explicit"}
	if s.CA != nil {
		cfg["ca_certificate"] = string(s.CA)
	} else {
		cfg["tls"] = "none"
	}
	return &docflow.Integration{ID: 8, IntegrationType: docflow.IntegrationFTP, Direction: docflow.DirectionDestination,
		Config: cfg, Credentials: creds}
}

func client(t *testing.T, in *docflow.Integration, dial netguard.Dialer) docflow.DestinationClient {
	t.Helper()
	c, err := ftp.New(in, dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func deliver(t *testing.T, c docflow.DestinationClient, name string, body []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.Deliver(ctx, docflow.DestinationDoc{FileID: 1, Name: name, Size: int64(len(body))}, bytes.NewReader(body))
}

func wantClass(t *testing.T, err error, class docflow.DestinationFailure, reason string) {
	t.Helper()
	var de *docflow.DestinationError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a DestinationError", err, err)
	}
	if de.Class != class || !strings.Contains(de.Reason, reason) {
		t.Fatalf("error = %s %q (%v), want %s with %q", de.Class, de.Reason, de.Err, class, reason)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestDeliverOverwriteTLS stores a document over explicit TLS in a folder
// that does not exist yet, and a second delivery of the same name
// replaces it: one file, no temporary file left.
func TestDeliverOverwriteTLS(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	c := client(t, integration(s, "/upload/docs/2026", nil), allowLoopback)
	remote, err := deliver(t, c, "Invoice ACME.pdf", []byte("first version, longer than the second"))
	if err != nil {
		log, _ := os.ReadFile(s.Log)
		t.Fatalf("%v (%v)\n%s", err, errors.Unwrap(err), log)
	}
	if remote != "/upload/docs/2026/Invoice ACME.pdf" {
		t.Fatalf("remote path %q", remote)
	}
	if _, err := deliver(t, c, "Invoice ACME.pdf", []byte("second")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Root, "upload/docs/2026")
	got, err := os.ReadFile(filepath.Join(dir, "Invoice ACME.pdf"))
	if err != nil || string(got) != "second" {
		t.Fatalf("stored %q, %v", got, err)
	}
	if n := names(t, dir); len(n) != 1 {
		t.Fatalf("folder holds %q", n)
	}
	// An empty document is a file too.
	if _, err := deliver(t, c, "empty.txt", nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "empty.txt")); err != nil || fi.Size() != 0 {
		t.Fatalf("empty.txt: %v %v", fi, err)
	}
}

// TestPlainFTPUnusualNames: with tls: none, names with spaces, quotes,
// shell characters and letters outside ASCII are stored as they are, and
// names that would leave the folder are refused.
func TestPlainFTPUnusualNames(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{})
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	name := `Rechnung März 2026 — #1 (final) 'a' "b" $x;&|*?.pdf`
	if _, err := deliver(t, c, name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, "upload", name)); err != nil {
		t.Fatalf("%v: %q", err, names(t, filepath.Join(s.Root, "upload")))
	}
	for _, bad := range []string{"../escape.pdf", "a/b.pdf", "..", "", "x\r\nDELE y"} {
		_, err := deliver(t, c, bad, []byte("x"))
		wantClass(t, err, docflow.DestInvalid, "file name")
	}
	if n := names(t, filepath.Join(s.Root, "upload")); len(n) != 1 {
		t.Fatalf("upload holds %q", n)
	}
}

// TestRelativeFolder: a path without a leading slash is inside the
// login folder.
func TestRelativeFolder(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{})
	c := client(t, integration(s, "upload/rel", nil), allowLoopback)
	remote, err := deliver(t, c, "a.pdf", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if remote != "/upload/rel/a.pdf" {
		t.Fatalf("remote %q", remote)
	}
}

// TestTLSRequiredByDefault: a server without TLS is refused under the
// default tls: explicit; nothing is sent in the clear, the password
// least of all.
func TestTLSRequiredByDefault(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{})
	in := integration(s, "/upload", nil)
	delete(in.Config, "tls")
	c := client(t, in, allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestUnavailable, ftp.FailTLSRefused)
	log, _ := os.ReadFile(s.Log)
	if strings.Contains(string(log), `"USER `) {
		t.Fatalf("a login was sent without TLS:\n%s", log)
	}
}

// TestUntrustedCertificate: without ca_certificate the test CA's
// certificate is not trusted.
func TestUntrustedCertificate(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	in := integration(s, "/upload", nil)
	delete(in.Config, "ca_certificate")
	c := client(t, in, allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestUnavailable, netguard.FailUntrusted)
}

// TestPlainLoginRefusedByTLSServer: tls: none to a server that requires
// TLS is the server's refusal, with its reason (the FTP library keeps
// only the text of a refused USER).
func TestPlainLoginRefusedByTLSServer(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	in := integration(s, "/upload", nil)
	in.Config["tls"] = "none"
	c := client(t, in, allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestAuth, "login refused: Non-anonymous sessions must use encryption.")
}

// TestLargeFileStreamed delivers 96 MiB over TLS from a reader that makes
// the bytes as they are read: the heap stays far below the file's size,
// and the stored file is the same bytes.
func TestLargeFileStreamed(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	const size = 96 << 20
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "big.bin", Size: size}, &pattern{left: size})
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	if grown := int64(peak.Load()) - int64(base.HeapInuse); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB during a %d MiB delivery", grown>>20, size>>20)
	}
	f, err := os.Open(filepath.Join(s.Root, "upload", "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, f); err != nil || n != size {
		t.Fatalf("stored %d bytes, %v", n, err)
	}
	want := sha256.New()
	io.Copy(want, &pattern{left: size}) //nolint:errcheck
	if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
		t.Fatal("stored bytes differ")
	}
}

// pattern yields left bytes of a repeating pattern, made as read.
type pattern struct{ left, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 2654435761 >> 13)
	}
	p.off += int64(len(b))
	p.left -= int64(len(b))
	return len(b), nil
}

// TestShortBodyNotStored: a body that ends before doc.Size bytes leaves
// nothing under the name, nor a temporary file.
func TestShortBodyNotStored(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "short.pdf", Size: 100}, strings.NewReader("only a bit"))
	wantClass(t, err, docflow.DestUnavailable, "document")
	if n := names(t, filepath.Join(s.Root, "upload")); len(n) != 0 {
		t.Fatalf("upload holds %q", n)
	}
	if _, err := deliver(t, c, "after.pdf", []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

// slow yields bytes without end, slowly once n were read, after which it
// calls cancel.
type slow struct {
	n      int
	cancel func()
}

func (s *slow) Read(b []byte) (int, error) {
	if s.n <= 0 {
		s.cancel()
		time.Sleep(5 * time.Millisecond)
	}
	b = b[:min(len(b), 4096)]
	s.n -= len(b)
	return len(b), nil
}

// TestCancelMidUpload: a context ending while the body is being sent
// stops the delivery at once, and the name is never written.
func TestCancelMidUpload(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	_, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "cut.pdf", Size: 1 << 30}, &slow{n: 1 << 20, cancel: cancel})
	wantClass(t, err, docflow.DestUnavailable, "")
	if time.Since(start) > 20*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(s.Root, "upload", "cut.pdf")); !os.IsNotExist(err) {
		t.Fatalf("cut.pdf: %v", err)
	}
	if _, err := deliver(t, c, "next.pdf", []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

func TestUnreachable(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{})
	in := integration(s, "/upload", nil)
	s.Stop()
	c := client(t, in, allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestUnavailable, netguard.FailConnect)
	wantClass(t, c.Probe(context.Background()), docflow.DestUnavailable, netguard.FailConnect)
}

func TestPrivateAddressRefused(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{})
	c := client(t, integration(s, "/upload", nil), netguard.Dialer{})
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestForbidden, netguard.FailPrivate)
}

func TestBadCredentials(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	c := client(t, integration(s, "/upload", map[string]string{"username": s.User.Name, "password": "wrong"}), allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestAuth, "530 Login incorrect")
	wantClass(t, c.Probe(context.Background()), docflow.DestAuth, "530 ")
}

// TestPermissionDenied: a folder the account may only read, and a folder
// it may not create, are DestForbidden with the server's code and reason.
func TestPermissionDenied(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	for path, reply := range map[string]string{"/readonly": "553 ", "/readonly/new/folder": "550 "} {
		c := client(t, integration(s, path, nil), allowLoopback)
		_, err := deliver(t, c, "a.pdf", []byte("x"))
		wantClass(t, err, docflow.DestForbidden, reply)
		wantClass(t, c.Probe(context.Background()), docflow.DestForbidden, reply)
	}
	if n := names(t, filepath.Join(s.Root, "readonly")); len(n) != 0 {
		t.Fatalf("readonly holds %q", n)
	}
}

func TestProbe(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	c := client(t, integration(s, "/upload/probe", nil), allowLoopback)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := names(t, filepath.Join(s.Root, "upload/probe")); len(n) != 0 {
		t.Fatalf("probe left %q", n)
	}
}

func TestConfigRefused(t *testing.T) {
	base := func() *docflow.Integration {
		return &docflow.Integration{Config: map[string]any{"host": "ftp.example.com", "port": float64(21)},
			Credentials: map[string]string{"username": "u", "password": "p"}}
	}
	for name, change := range map[string]func(*docflow.Integration){
		"no host":     func(in *docflow.Integration) { delete(in.Config, "host") },
		"tls":         func(in *docflow.Integration) { in.Config["tls"] = "implicit" },
		"no password": func(in *docflow.Integration) { delete(in.Credentials, "password") },
		"bad ca":      func(in *docflow.Integration) { in.Config["ca_certificate"] = "nope" },
		"port":        func(in *docflow.Integration) { in.Config["port"] = float64(0) },
	} {
		in := base()
		change(in)
		_, err := ftp.New(in, netguard.Dialer{})
		var de *docflow.DestinationError
		if !errors.As(err, &de) || de.Class != docflow.DestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ftp.New(base(), netguard.Dialer{}); err != nil {
		t.Fatal(err)
	}
}

// TestFullDisk: vsftpd answers a write on a full disk with 451, a local
// error: retried as unavailable, with the server's reason, and nothing
// is left under the name nor beside it.
func TestFullDisk(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	folder := s.FullFolder(t, "full")
	c := client(t, integration(s, folder, nil), allowLoopback)
	_, err := deliver(t, c, "a.pdf", bytes.Repeat([]byte("x"), 64<<10))
	wantClass(t, err, docflow.DestUnavailable, "451 ")
	if n := names(t, filepath.Join(s.Root, "full")); len(n) != 1 || n[0] != "filler" {
		t.Fatalf("full holds %q", n)
	}
}
