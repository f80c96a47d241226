// Package sysuser makes the system accounts that real servers in tests
// (OpenSSH, vsftpd) log their users in as. Such servers authenticate
// against /etc/passwd and /etc/shadow, so their test users must exist on
// the machine: each is made once, with a shell from /etc/shells (PAM's
// pam_shells refuses others) and a known password, and kept for later
// runs. Only root can make them; the tests that need them skip otherwise.
package sysuser

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

// Account is a system account for a test server.
type Account struct {
	Name, Password string
	UID, GID       int
}

// Ensure returns the account name, making it when missing, and sets its
// password. It skips the test when not run as root or when useradd is
// missing.
func Ensure(t testing.TB, name, password string) Account {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("the %s account for a real test server can only be made as root", name)
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd is missing: cannot make the test server's account")
	}
	u, err := user.Lookup(name)
	if err != nil {
		// Home "/" (vsftpd enters the home before its local_root, sshd
		// chroots elsewhere) and /bin/sh (pam_shells wants a shell listed
		// in /etc/shells).
		out, err := exec.Command("useradd", "--no-create-home", "--home-dir", "/",
			"--shell", "/bin/sh", "--comment", "docflow test server account", name).CombinedOutput()
		if u, _ = user.Lookup(name); u == nil {
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
	}
	if u.HomeDir != "/" {
		if out, err := exec.Command("usermod", "--home", "/", name).CombinedOutput(); err != nil {
			t.Fatalf("usermod %s: %v: %s", name, err, out)
		}
	}
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(fmt.Sprintf("%s:%s\n", name, password))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd %s: %v: %s", name, err, out)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return Account{Name: name, Password: password, UID: uid, GID: gid}
}
