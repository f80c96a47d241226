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

// MountFull mounts a tmpfs of 256 KiB on dir (made when missing), owned by
// acct, fills it to the last block, and unmounts it when the test ends: a
// folder whose disk is full, for a server to meet for real. It skips the
// test when mounting is not possible here.
func MountFull(t testing.TB, dir string, acct Account) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o",
		fmt.Sprintf("size=256k,mode=0755,uid=%d,gid=%d", acct.UID, acct.GID), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
	f, err := os.Create(dir + "/filler")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}
