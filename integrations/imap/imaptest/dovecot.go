package imaptest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Dovecot is a real Dovecot IMAP server run for a test: plain IMAP on
// 127.0.0.1, PLAIN login from a passwd-file, one maildir per user in a
// temporary folder (TEST-SERVERS.md, IMAP). Started with TLS, it also
// serves IMAPS and STARTTLS, and refuses logins before TLS.
type Dovecot struct {
	// Addr is the IMAP listener (with TLS: offering STARTTLS); TLSAddr,
	// with TLS, the IMAPS listener.
	Addr, TLSAddr string
	bin           string
	dir           string
	conf          string
}

// StartDovecot starts Dovecot for the test with the users (name →
// password) and stops it at the end. It skips the test when Dovecot is not
// installed (scripts/install-deps.sh installs it) or the test does not run
// as root (Dovecot drops to its own users).
func StartDovecot(t testing.TB, users map[string]string) *Dovecot {
	t.Helper()
	if _, err := dovecotBin(); err != nil {
		t.Skip(err.Error())
	}
	if os.Geteuid() != 0 {
		t.Skip("Dovecot tests run as root")
	}
	d, err := NewDovecot(users)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// DovecotTLS is the TLS side of a Dovecot run.
type DovecotTLS struct {
	// CertPEM and KeyPEM are the server's certificate (for Host) and key.
	CertPEM, KeyPEM []byte
	// Host is the loopback address the server listens on. Dovecot counts a
	// connection whose two ends share an address as secure, and would let
	// a plain login through: the client must connect from another one
	// (127.0.0.1 to a Host of 127.0.0.2).
	Host string
}

// StartDovecotTLS is StartDovecot with TLS: IMAPS on TLSAddr, STARTTLS on
// Addr, logins refused before TLS (disable_plaintext_auth), both on
// tc.Host.
func StartDovecotTLS(t testing.TB, users map[string]string, tc DovecotTLS) *Dovecot {
	t.Helper()
	if _, err := dovecotBin(); err != nil {
		t.Skip(err.Error())
	}
	if os.Geteuid() != 0 {
		t.Skip("Dovecot tests run as root")
	}
	d, err := newDovecot(users, &tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func dovecotBin() (string, error) {
	if bin, err := exec.LookPath("dovecot"); err == nil {
		return bin, nil
	}
	if _, err := os.Stat("/usr/sbin/dovecot"); err == nil {
		return "/usr/sbin/dovecot", nil
	}
	return "", errors.New("dovecot is not installed (scripts/install-deps.sh)")
}

// NewDovecot starts Dovecot with the users (name → password); Close stops
// it and removes its files. It must run as root.
func NewDovecot(users map[string]string) (*Dovecot, error) { return newDovecot(users, nil) }

func newDovecot(users map[string]string, tc *DovecotTLS) (*Dovecot, error) {
	bin, err := dovecotBin()
	if err != nil {
		return nil, err
	}
	// The folder above base_dir must be root-owned and 0755, and Dovecot's
	// user (nobody) must pass every folder above the maildirs: not
	// t.TempDir (0700) nor a TMPDIR of unknown modes, /tmp.
	dir, err := os.MkdirTemp("/tmp", "docflow-dovecot-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755) //nolint:errcheck
	d := &Dovecot{bin: bin, dir: dir, conf: filepath.Join(dir, "dovecot.conf")}
	mail := filepath.Join(dir, "mail")
	if err := os.MkdirAll(mail, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	exec.Command("chown", "nobody:nogroup", mail).Run() //nolint:errcheck
	var pw []byte
	for u, p := range users {
		pw = fmt.Appendf(pw, "%s:{PLAIN}%s::::::\n", u, p)
	}
	if err := os.WriteFile(filepath.Join(dir, "users"), pw, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	host := "127.0.0.1"
	if tc != nil && tc.Host != "" {
		host = tc.Host
	}
	port, err := freePort(host)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	// Without TLS, no IMAPS listener (port 0 disables it).
	ssl, plainAuth, tlsPort := "ssl = no", "no", 0
	if tc != nil {
		if tlsPort, err = freePort(host); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		d.TLSAddr = net.JoinHostPort(host, strconv.Itoa(tlsPort))
		// Read by Dovecot's config process, as root: the key stays 0600.
		cert, key := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
		if err := os.WriteFile(cert, tc.CertPEM, 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.WriteFile(key, tc.KeyPEM, 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		ssl = fmt.Sprintf("ssl = yes\nssl_cert = <%s\nssl_key = <%s\nssl_min_protocol = TLSv1.2", cert, key)
		plainAuth = "yes"
	}
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
protocols = imap
listen = %[3]s
%[4]s
disable_plaintext_auth = %[5]s
auth_mechanisms = plain login
mail_location = maildir:%[1]s/mail/%%u/Maildir
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/users
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=%[1]s/mail/%%u
}
service imap-login {
  inet_listener imap {
    address = %[3]s
    port = %[2]d
  }
  inet_listener imaps {
    address = %[3]s
    port = %[6]d
  }
}
protocol imap {
  mail_max_userip_connections = 500
}
`, dir, port, host, ssl, plainAuth, tlsPort)
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := d.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return d, nil
}

// Close stops the server and removes its files.
func (d *Dovecot) Close() {
	d.Stop()
	os.RemoveAll(d.dir)
}

// Start starts the server (again) and waits until it accepts connections.
func (d *Dovecot) Start() error {
	// NOTE: the daemon keeps inherited pipes open: its output goes to a
	// file, or a captured output would never end.
	out, err := os.OpenFile(filepath.Join(d.dir, "start.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(d.bin, "-c", d.conf)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(filepath.Join(d.dir, "start.out"))
		return fmt.Errorf("start dovecot: %v: %s", err, b)
	}
	// The master forks its listeners after it returns: on a loaded
	// machine that can take seconds.
	for deadline := time.Now().Add(serverWait); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", d.Addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dovecot does not listen on %s after %v; log: %s", d.Addr, serverWait, d.Log())
		}
	}
}

// serverWait bounds the waits for Dovecot to listen and to stop
// listening: far beyond an idle machine's tenth of a second, since a
// busy one is slower by orders of magnitude.
const serverWait = 2 * time.Minute

// Stop stops the server and waits until the port is free (a Start after
// it can listen again), for at most serverWait.
func (d *Dovecot) Stop() {
	exec.Command(d.bin, "-c", d.conf, "stop").Run() //nolint:errcheck
	for deadline := time.Now().Add(serverWait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", d.Addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
	}
}

// Log is the server's log.
func (d *Dovecot) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
	return string(b)
}

// freePort finds a free TCP port on host.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
