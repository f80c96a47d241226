// Package sftp is the SFTP destination: it stores each document in a
// folder of an SSH server (github.com/pkg/sftp over golang.org/x/crypto/ssh).
//
// The server is known by the SHA256 fingerprint of one of its host keys,
// pinned in the integration (host_key_fingerprint, as `ssh-keygen -lf`
// prints it): a server that shows none of the pinned key is refused
// (DestHostKey), never trusted on first use nor after a change. The user
// logs in with a password, a private key, or both. A document is streamed
// to a temporary name in the target folder and then renamed over its
// name, so the folder never holds half a file under the real name and a
// second delivery replaces the first. Missing folders are created.
package sftp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// DefaultPort is the SSH port.
const DefaultPort = 22

// Config is one SFTP destination.
type Config struct {
	Host string
	Port int
	// Folder is config.path cleaned: "/" the server's root, "docs"
	// relative to the login folder, "" the login folder.
	Folder string
	// Fingerprint is the SHA-256 of the pinned host key (32 bytes).
	Fingerprint []byte
	Username    string
	Password    string
	// Signer is the parsed private_key, or nil.
	Signer ssh.Signer
	// Idle bounds each read and write (upload.DefaultIdle when 0).
	Idle time.Duration
	// Dial opens the TCP connection: the guarded dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ParseConfig reads an SFTP integration's config and credentials
// (decisions.md, Integrations). Its errors are DestInvalid: the
// integration must change before a delivery can work.
func ParseConfig(in *docflow.Integration, dial netguard.Dialer) (Config, error) {
	c := Config{Dial: dial.DialContext}
	m := in.Config
	c.Host = upload.String(m, "host")
	var err error
	if c.Port, err = upload.Int(m, "port", DefaultPort); err != nil {
		return c, invalid(err.Error())
	}
	if v, ok := m["path"]; !ok || v == nil {
		c.Folder = "/"
	} else {
		c.Folder = upload.Folder(upload.String(m, "path"))
	}
	switch {
	case c.Host == "":
		return c, invalid("config.host is required")
	case c.Port < 1 || c.Port > 65535:
		return c, invalid("config.port must be 1–65535")
	}
	if c.Fingerprint, err = ParseFingerprint(upload.String(m, "host_key_fingerprint")); err != nil {
		return c, invalid(err.Error())
	}
	c.Username = in.Credentials["username"]
	c.Password = in.Credentials["password"]
	if c.Username == "" {
		return c, invalid("credentials.username is required")
	}
	if key := strings.TrimSpace(in.Credentials["private_key"]); key != "" {
		if c.Signer, err = ssh.ParsePrivateKey([]byte(key)); err != nil {
			var pass *ssh.PassphraseMissingError
			if errors.As(err, &pass) {
				return c, invalid("credentials.private_key is protected by a passphrase: give the key without one")
			}
			return c, invalid("credentials.private_key is not a private key in OpenSSH or PEM form")
		}
	}
	if c.Password == "" && c.Signer == nil {
		return c, invalid("credentials need a password or a private_key")
	}
	return c, nil
}

// ParseFingerprint reads a host key fingerprint as `ssh-keygen -lf`
// prints it ("SHA256:" and the unpadded base64 of 32 bytes; padding is
// accepted) and returns its 32 bytes.
func ParseFingerprint(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), "SHA256:")
	if !ok {
		return nil, errors.New("config.host_key_fingerprint must be SHA256:<base64> (as ssh-keygen -lf prints it)")
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(b64, "="))
	if err != nil || len(raw) != sha256.Size {
		return nil, errors.New("config.host_key_fingerprint must be SHA256:<base64> of 32 bytes (as ssh-keygen -lf prints it)")
	}
	return raw, nil
}

func (c Config) addr() string { return net.JoinHostPort(c.Host, fmt.Sprint(c.Port)) }

func invalid(reason string) error {
	return docflow.DestFail(docflow.DestInvalid, reason, nil)
}
