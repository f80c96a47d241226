// Package vsftpd runs vsftpd for tests, on a free 127.0.0.1 port with
// passive ports of its own (TEST-SERVERS.md, FTP): one account, chrooted
// to a folder under /srv, that may write in /upload and only read
// /readonly. With TLS it requires explicit TLS (AUTH TLS) for the login
// and the data, with a certificate from a CA made for the test. vsftpd
// logs users in through PAM, whose pam_shells wants a shell listed in
// /etc/shells: the account has /bin/sh. It needs root and the vsftpd
// package (scripts/install-deps.sh test); tests skip without them.
package vsftpd

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow/internal/testsupport/sysuser"
	"docflow/internal/testsupport/testbin"
)

// Binary is where Debian's vsftpd package installs the server.
const Binary = "/usr/sbin/vsftpd"

// Account is the system account the server's user logs in as, and its
// password.
const (
	Account  = "docflow-ftp"
	Password = "docflow-ftp-test-password"
)

// Options choose how a server runs.
type Options struct {
	// TLS requires explicit TLS for logins and data.
	TLS bool
	// NoSessionReuse lets data connections start TLS sessions of their
	// own (vsftpd's default, require_ssl_reuse, refuses them).
	NoSessionReuse bool
}

// Server is a running vsftpd.
type Server struct {
	Host string
	Port int
	User sysuser.Account
	// Root is the user's chroot on this machine (Root/upload is
	// writable, Root/readonly is not).
	Root string
	// CA is the PEM certificate of the CA that signed the server's
	// certificate (with TLS).
	CA []byte
	// Log is vsftpd's protocol log.
	Log string

	dir  string
	opts Options
	proc *testbin.Proc
}

// Start runs vsftpd until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("vsftpd is not installed at %s (scripts/install-deps.sh test installs it)", Binary)
	}
	acct := sysuser.Ensure(t, Account, Password)
	dir, err := os.MkdirTemp("/tmp", "docflow-vsftpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// vsftpd refuses a chroot its user can write to, and walks into it
	// as the user: a root-owned 0755 folder outside /tmp's sticky bit.
	root, err := os.MkdirTemp("/srv", "docflow-ftp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"upload", "readonly"} {
		if err := os.Mkdir(filepath.Join(root, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(root, "upload"), acct.UID, acct.GID); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/var/run/vsftpd/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", User: acct, Root: root, dir: dir, opts: opts, Log: filepath.Join(dir, "vsftpd.log")}
	if opts.TLS {
		s.makeCertificate(t)
	}
	testbin.Start(t, "vsftpd", func() (struct{}, error) { return struct{}{}, s.start() })
	t.Cleanup(s.Stop)
	return s
}

// FullFolder makes the folder name in the chroot (writable by the user)
// a full disk, and returns its path as the user sees it ("/name").
func (s *Server) FullFolder(t testing.TB, name string) string {
	t.Helper()
	sysuser.MountFull(t, filepath.Join(s.Root, name), s.User)
	return "/" + name
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func (s *Server) start() error {
	port, err := testbin.FreePort()
	if err != nil {
		return err
	}
	pasv, err := freeRange(8)
	if err != nil {
		return err
	}
	s.Port = port
	tls := "ssl_enable=NO\n"
	if s.opts.TLS {
		reuse := "YES"
		if s.opts.NoSessionReuse {
			reuse = "NO"
		}
		tls = fmt.Sprintf(`ssl_enable=YES
rsa_cert_file=%[1]s/server.crt
rsa_private_key_file=%[1]s/server.key
force_local_logins_ssl=YES
force_local_data_ssl=YES
allow_anon_ssl=NO
require_ssl_reuse=%[2]s
ssl_ciphers=HIGH
`, s.dir, reuse)
	}
	conf := fmt.Sprintf(`listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=%[1]d
background=NO
anonymous_enable=NO
local_enable=YES
write_enable=YES
local_umask=022
chroot_local_user=YES
local_root=%[2]s
pasv_enable=YES
pasv_address=127.0.0.1
pasv_min_port=%[3]d
pasv_max_port=%[4]d
seccomp_sandbox=NO
pam_service_name=vsftpd
secure_chroot_dir=/var/run/vsftpd/empty
utf8_filesystem=YES
userlist_enable=NO
xferlog_enable=YES
vsftpd_log_file=%[5]s
log_ftp_protocol=YES
%[6]s`, port, s.Root, pasv, pasv+7, s.Log, tls)
	path := filepath.Join(s.dir, "vsftpd.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return err
	}
	proc, err := testbin.Launch("vsftpd", s.dir, Binary, []string{path}, nil)
	if err != nil {
		return err
	}
	if err := proc.WaitReady(20*time.Second, s.Addr(), s.greets); err != nil {
		return err
	}
	s.proc = proc
	return nil
}

// Stop stops vsftpd (sessions already open keep their own processes
// until they end).
func (s *Server) Stop() {
	if s.proc != nil {
		s.proc.Stop()
		s.proc = nil
	}
}

func (s *Server) greets() bool {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "220")
}

// freeRange finds n consecutive ports free on 127.0.0.1 now.
func freeRange(n int) (int, error) {
	for range 50 {
		base := 20000 + mrand.IntN(30000)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d free consecutive ports", n)
}

// makeCertificate makes a CA and a certificate for 127.0.0.1 it signs.
func (s *Server) makeCertificate(t testing.TB) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "docflow test FTP CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(2 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(2 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(s.dir, "server.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "server.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}
