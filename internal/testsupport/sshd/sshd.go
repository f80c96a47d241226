// Package sshd runs OpenSSH's sshd for tests, on a free 127.0.0.1 port,
// with its own config (TEST-SERVERS.md, SFTP): one account, chrooted to a
// folder under /srv with internal-sftp forced, that logs in with a
// password or a key. sshd refuses a chroot any of whose folders is not
// root-owned, so the chroot cannot be under /tmp. It needs root and the
// openssh-server package (scripts/install-deps.sh test); tests skip
// without them.
package sshd

import (
	"bufio"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"docflow/internal/testsupport/sysuser"
	"docflow/internal/testsupport/testbin"
)

// Binary is where Debian's openssh-server installs sshd (it must be run
// by its absolute path, as it executes itself again for each connection).
const Binary = "/usr/sbin/sshd"

// Account is the system account the server's user logs in as, and its
// password.
const (
	Account  = "docflow-sftp"
	Password = "docflow-sftp-test-password"
)

// Key types a server can be given host keys of.
const (
	Ed25519 = "ed25519"
	ECDSA   = "ecdsa"
	RSA     = "rsa"
)

// Server is a running sshd.
type Server struct {
	Host string
	Port int
	User sysuser.Account
	// ClientKey is an unencrypted OpenSSH private key the server accepts
	// for User.
	ClientKey string
	// Root is the user's chroot on this machine; in it the user may write
	// in /upload (Root/upload) and only read /readonly.
	Root string
	// Fingerprints are the SHA256 fingerprints of the host keys by type
	// (Ed25519, ECDSA, RSA), as `ssh-keygen -lf` prints them.
	Fingerprints map[string]string
	// PublicKeyFiles are the host keys' .pub files, by type.
	PublicKeyFiles map[string]string

	dir      string
	keyTypes []string
	proc     *testbin.Proc
}

// Start runs sshd with host keys of keyTypes (Ed25519 when none) until
// the test ends.
func Start(t testing.TB, keyTypes ...string) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("OpenSSH's sshd is not installed at %s (scripts/install-deps.sh test installs openssh-server)", Binary)
	}
	acct := sysuser.Ensure(t, Account, Password)
	if len(keyTypes) == 0 {
		keyTypes = []string{Ed25519}
	}
	dir, err := os.MkdirTemp("/tmp", "docflow-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	// sshd reads authorized_keys as the user: its folder must be open.
	os.Chmod(dir, 0o755) //nolint:errcheck
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := os.MkdirTemp("/srv", "docflow-sftp-")
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
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", User: acct, Root: root, dir: dir, keyTypes: keyTypes}
	clientKey, authorized := newKey(t, Ed25519)
	s.ClientKey = string(clientKey)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), authorized, 0o644); err != nil {
		t.Fatal(err)
	}
	s.NewHostKeys(t)
	testbin.Start(t, "sshd", func() (struct{}, error) {
		port, err := testbin.FreePort()
		if err != nil {
			return struct{}{}, err
		}
		s.Port = port
		return struct{}{}, s.Start()
	})
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

// Fingerprint is the fingerprint of the server's first host key.
func (s *Server) Fingerprint() string { return s.Fingerprints[s.keyTypes[0]] }

// NewHostKeys makes new host keys of the server's types, which it shows
// from its next Start.
func (s *Server) NewHostKeys(t testing.TB) {
	t.Helper()
	s.Fingerprints, s.PublicKeyFiles = map[string]string{}, map[string]string{}
	for _, kt := range s.keyTypes {
		priv, pub := newKey(t, kt)
		file := filepath.Join(s.dir, "host_"+kt)
		if err := os.WriteFile(file, priv, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file+".pub", pub, 0o644); err != nil {
			t.Fatal(err)
		}
		pk, _, _, _, err := ssh.ParseAuthorizedKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		s.Fingerprints[kt] = ssh.FingerprintSHA256(pk)
		s.PublicKeyFiles[kt] = file + ".pub"
	}
}

// Start starts sshd (again, on the same port) and waits until it greets.
func (s *Server) Start() error {
	var hostKeys strings.Builder
	for _, kt := range s.keyTypes {
		fmt.Fprintf(&hostKeys, "HostKey %s\n", filepath.Join(s.dir, "host_"+kt))
	}
	conf := fmt.Sprintf(`Port %[1]d
ListenAddress 127.0.0.1
%[2]sPidFile %[3]s/sshd.pid
AuthorizedKeysFile %[3]s/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin no
AllowUsers %[4]s
MaxStartups 100
MaxAuthTries 20
Subsystem sftp internal-sftp
Match User %[4]s
  ChrootDirectory %[5]s
  ForceCommand internal-sftp
  AllowTcpForwarding no
  X11Forwarding no
`, s.Port, hostKeys.String(), s.dir, s.User.Name, s.Root)
	path := filepath.Join(s.dir, "sshd_config")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	proc, err := testbin.Launch("sshd", s.dir, Binary, []string{"-D", "-e", "-f", path}, nil)
	if err != nil {
		return err
	}
	if err := proc.WaitReady(20*time.Second, s.Addr(), s.greets); err != nil {
		return err
	}
	s.proc = proc
	return nil
}

// Stop stops sshd (sessions already open keep their own processes until
// they end).
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
	return err == nil && strings.HasPrefix(line, "SSH-2.0-")
}

// newKey makes a key of type kt: its private key in OpenSSH PEM form and
// its public key as an authorized_keys line.
func newKey(t testing.TB, kt string) (private, public []byte) {
	t.Helper()
	var key crypto.Signer
	var err error
	switch kt {
	case Ed25519:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case ECDSA:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("sshd: unknown key type %q", kt)
	}
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), ssh.MarshalAuthorizedKey(pub)
}
