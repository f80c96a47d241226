package imaptest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Dovecot is a real Dovecot IMAP server run for a test: plain IMAP on
// 127.0.0.1, PLAIN login from a passwd-file, one maildir per user in a
// temporary folder (TEST-SERVERS.md, IMAP).
type Dovecot struct {
	Addr string
	bin  string
	dir  string
	conf string
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
func NewDovecot(users map[string]string) (*Dovecot, error) {
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	d.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
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
    address = 127.0.0.1
    port = %[2]d
  }
  inet_listener imaps {
    port = 0
  }
}
protocol imap {
  mail_max_userip_connections = 500
}
`, dir, port)
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
	for i := 0; i < 100; i++ {
		if c, err := net.DialTimeout("tcp", d.Addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("dovecot does not listen on %s; log: %s", d.Addr, d.Log())
}

// Stop stops the server and waits until the port is free.
func (d *Dovecot) Stop() {
	exec.Command(d.bin, "-c", d.conf, "stop").Run() //nolint:errcheck
	for i := 0; i < 100; i++ {
		c, err := net.DialTimeout("tcp", d.Addr, 200*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// Log is the server's log.
func (d *Dovecot) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
	return string(b)
}
