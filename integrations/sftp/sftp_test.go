package sftp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/sftp"
	"docflow/internal/netguard"
	"docflow/internal/testsupport/sshd"
)

var allowLoopback = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }, Timeout: 5 * time.Second}

func integration(s *sshd.Server, path string, creds map[string]string) *docflow.Integration {
	if creds == nil {
		creds = map[string]string{"username": s.User.Name, "password": s.User.Password}
	}
	return &docflow.Integration{ID: 7, IntegrationType: docflow.IntegrationSFTP, Direction: docflow.DirectionDestination,
		Config: map[string]any{"host": s.Host, "port": float64(s.Port), "path": path,
			"host_key_fingerprint": s.Fingerprint()},
		Credentials: creds}
}

func client(t *testing.T, in *docflow.Integration, dial netguard.Dialer) docflow.DestinationClient {
	t.Helper()
	c, err := sftp.New(in, dial)
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

// names lists the folder's entries.
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

// TestDeliverOverwrite stores a document in a folder that does not exist
// yet, and a second delivery of the same name replaces it: one file, no
// temporary file left.
func TestDeliverOverwrite(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload/docs/2026", nil), allowLoopback)
	remote, err := deliver(t, c, "Invoice ACME.pdf", []byte("first version, longer than the second"))
	if err != nil {
		t.Fatal(err)
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
}

// TestPrivateKeyLogin logs in with a key alone, and with a key and a
// wrong password (the key is tried first).
func TestPrivateKeyLogin(t *testing.T) {
	s := sshd.Start(t)
	for _, creds := range []map[string]string{
		{"username": s.User.Name, "private_key": s.ClientKey},
		{"username": s.User.Name, "private_key": s.ClientKey, "password": "wrong"},
	} {
		c := client(t, integration(s, "/upload", creds), allowLoopback)
		if _, err := deliver(t, c, "key.txt", []byte("by key")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUnusualNames stores names with spaces, quotes, shell characters and
// letters outside ASCII as they are, and refuses names that would leave
// the folder.
func TestUnusualNames(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	name := `Rechnung März 2026 — #1 (final) 'a' "b" $x;&|*?.pdf`
	if _, err := deliver(t, c, name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, "upload", name)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"../escape.pdf", "a/b.pdf", "..", "", "x\ny.pdf"} {
		_, err := deliver(t, c, bad, []byte("x"))
		wantClass(t, err, docflow.DestInvalid, "file name")
	}
	if n := names(t, filepath.Join(s.Root, "upload")); len(n) != 1 {
		t.Fatalf("upload holds %q", n)
	}
}

// TestLargeFileStreamed delivers 96 MiB from a reader that makes the
// bytes as they are read: the heap stays far below the file's size, and
// the stored file is the same bytes.
func TestLargeFileStreamed(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	const size = 96 << 20
	src := &pattern{left: size}
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
	_, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "big.bin", Size: size}, src)
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
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "short.pdf", Size: 100}, strings.NewReader("only a bit"))
	wantClass(t, err, docflow.DestUnavailable, "document")
	if n := names(t, filepath.Join(s.Root, "upload")); len(n) != 0 {
		t.Fatalf("upload holds %q", n)
	}
	// The connection still works.
	if _, err := deliver(t, c, "after.pdf", []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

// TestCancelMidUpload: a context ending while the body is being sent
// stops the delivery at once, and the name is never written.
func TestCancelMidUpload(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload", nil), allowLoopback)
	ctx, cancel := context.WithCancel(context.Background())
	body := &slow{n: 1 << 20, cancel: cancel}
	start := time.Now()
	_, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "cut.pdf", Size: 1 << 30}, body)
	wantClass(t, err, docflow.DestUnavailable, "")
	if time.Since(start) > 20*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(s.Root, "upload", "cut.pdf")); !os.IsNotExist(err) {
		t.Fatalf("cut.pdf: %v", err)
	}
	// The client connects again for the next delivery.
	if _, err := deliver(t, c, "next.pdf", []byte("ok")); err != nil {
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

func TestUnreachable(t *testing.T) {
	s := sshd.Start(t)
	in := integration(s, "/upload", nil)
	s.Stop()
	c := client(t, in, allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestUnavailable, netguard.FailConnect)
	wantClass(t, c.Probe(context.Background()), docflow.DestUnavailable, netguard.FailConnect)
}

// TestPrivateAddressRefused: without INTEGRATION_ALLOWED_HOSTS naming it,
// a loopback server is not dialled.
func TestPrivateAddressRefused(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload", nil), netguard.Dialer{})
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestForbidden, netguard.FailPrivate)
}

func TestBadCredentials(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload", map[string]string{"username": s.User.Name, "password": "wrong"}), allowLoopback)
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	wantClass(t, err, docflow.DestAuth, sftp.FailAuth)
	wantClass(t, c.Probe(context.Background()), docflow.DestAuth, sftp.FailAuth)
}

// TestPermissionDenied: a folder the account may only read, and a folder
// it may not create, are DestForbidden with the SFTP status's name.
func TestPermissionDenied(t *testing.T) {
	s := sshd.Start(t)
	for _, path := range []string{"/readonly", "/readonly/new/folder"} {
		c := client(t, integration(s, path, nil), allowLoopback)
		_, err := deliver(t, c, "a.pdf", []byte("x"))
		wantClass(t, err, docflow.DestForbidden, "SSH_FX_PERMISSION_DENIED")
		wantClass(t, c.Probe(context.Background()), docflow.DestForbidden, "SSH_FX_PERMISSION_DENIED")
	}
	if n := names(t, filepath.Join(s.Root, "readonly")); len(n) != 0 {
		t.Fatalf("readonly holds %q", n)
	}
}

// TestProbe writes and removes its probe file.
func TestProbe(t *testing.T) {
	s := sshd.Start(t)
	c := client(t, integration(s, "/upload/probe", nil), allowLoopback)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := names(t, filepath.Join(s.Root, "upload/probe")); len(n) != 0 {
		t.Fatalf("probe left %q", n)
	}
}

// TestChangedHostKey: a server whose host key changed after the
// fingerprint was pinned is refused, with the fingerprint it showed, and
// nothing is sent; pinning the new key lets the delivery through.
func TestChangedHostKey(t *testing.T) {
	s := sshd.Start(t)
	in := integration(s, "/upload", nil)
	c := client(t, in, allowLoopback)
	if _, err := deliver(t, c, "before.pdf", []byte("x")); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	s.Stop()
	s.NewHostKeys(t)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	_, err := deliver(t, c, "after.pdf", []byte("x"))
	wantClass(t, err, docflow.DestHostKey, s.Fingerprint())
	wantClass(t, c.Probe(context.Background()), docflow.DestHostKey, "does not match")
	if _, err := os.Stat(filepath.Join(s.Root, "upload", "after.pdf")); !os.IsNotExist(err) {
		t.Fatalf("after.pdf: %v", err)
	}
	in.Config["host_key_fingerprint"] = s.Fingerprint()
	if _, err := deliver(t, client(t, in, allowLoopback), "after.pdf", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// TestPinnedKeyOfAnyType: a server with Ed25519, ECDSA and RSA host keys
// is accepted whichever of them is pinned, and refused, naming all three,
// when none is.
func TestPinnedKeyOfAnyType(t *testing.T) {
	s := sshd.Start(t, sshd.Ed25519, sshd.ECDSA, sshd.RSA)
	for _, kt := range []string{sshd.RSA, sshd.ECDSA, sshd.Ed25519} {
		in := integration(s, "/upload", nil)
		in.Config["host_key_fingerprint"] = s.Fingerprints[kt]
		c := client(t, in, allowLoopback)
		if _, err := deliver(t, c, kt+".pdf", []byte("x")); err != nil {
			t.Fatalf("%s: %v", kt, err)
		}
		// A reconnection offers the kind that matched first.
		c.Close(context.Background())
		if _, err := deliver(t, c, kt+".pdf", []byte("y")); err != nil {
			t.Fatalf("%s again: %v", kt, err)
		}
	}
	in := integration(s, "/upload", nil)
	in.Config["host_key_fingerprint"] = "SHA256:" + strings.Repeat("A", 43)
	_, err := deliver(t, client(t, in, allowLoopback), "none.pdf", []byte("x"))
	for _, fp := range s.Fingerprints {
		wantClass(t, err, docflow.DestHostKey, fp)
	}
}

// TestFingerprintAsSSHKeygenPrintsIt: the fingerprint a user copies from
// `ssh-keygen -lf` is the one the client pins.
func TestFingerprintAsSSHKeygenPrintsIt(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed (openssh-client)")
	}
	s := sshd.Start(t)
	out, err := exec.Command("ssh-keygen", "-lf", s.PublicKeyFiles[sshd.Ed25519]).Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[1] != s.Fingerprint() {
		t.Fatalf("ssh-keygen printed %q, the server's key is %s", out, s.Fingerprint())
	}
	in := integration(s, "/upload", nil)
	in.Config["host_key_fingerprint"] = fields[1] + "="
	if _, err := deliver(t, client(t, in, allowLoopback), "a.pdf", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestConfigRefused(t *testing.T) {
	base := func() *docflow.Integration {
		return &docflow.Integration{Config: map[string]any{"host": "sftp.example.com", "port": float64(22),
			"host_key_fingerprint": "SHA256:" + strings.Repeat("A", 43)},
			Credentials: map[string]string{"username": "u", "password": "p"}}
	}
	for name, change := range map[string]func(*docflow.Integration){
		"no host":         func(in *docflow.Integration) { delete(in.Config, "host") },
		"bad fingerprint": func(in *docflow.Integration) { in.Config["host_key_fingerprint"] = "MD5:aa" },
		"no secret":       func(in *docflow.Integration) { delete(in.Credentials, "password") },
		"bad key":         func(in *docflow.Integration) { in.Credentials["private_key"] = "not a key" },
		"port":            func(in *docflow.Integration) { in.Config["port"] = float64(70000) },
	} {
		in := base()
		change(in)
		_, err := sftp.New(in, netguard.Dialer{})
		var de *docflow.DestinationError
		if !errors.As(err, &de) || de.Class != docflow.DestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := sftp.New(base(), netguard.Dialer{}); err != nil {
		t.Fatal(err)
	}
	_ = strconv.Itoa
}
