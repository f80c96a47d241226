// Package ftp is the FTP destination: it stores each document in a folder
// of an FTP server (github.com/jlaffaye/ftp), over explicit TLS (AUTH TLS,
// with the data connections protected too) unless the integration says
// tls: none. The server's certificate is checked against the system's
// roots, or against ca_certificate alone when given. Transfers use
// passive mode; every data connection goes to the address the control
// connection was made to, whatever the server's PASV answer names. A
// document is streamed to a temporary name in the target folder and then
// renamed over its name, so the folder never holds half a file under the
// real name and a second delivery replaces the first. Missing folders are
// created.
package ftp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Defaults (decisions.md, Integrations: FTP).
const (
	DefaultPort = 21
	TLSExplicit = "explicit"
	TLSNone     = "none"
)

// Config is one FTP destination.
type Config struct {
	Host string
	Port int
	// Folder is config.path cleaned: "/" the server's root (for a
	// chrooted account, its own root), "docs" relative to the login
	// folder, "" the login folder.
	Folder string
	// TLS is TLSExplicit or TLSNone.
	TLS           string
	CACertificate string
	Username      string
	Password      string
	// Idle bounds each read and write (upload.DefaultIdle when 0).
	Idle time.Duration
	// Dialer opens the connections: the guarded dialer.
	Dialer netguard.Dialer
}

// ParseConfig reads an FTP integration's config and credentials. Its
// errors are DestInvalid: the integration must change before a delivery
// can work.
func ParseConfig(in *docflow.Integration, dial netguard.Dialer) (Config, error) {
	c := Config{Dialer: dial, TLS: TLSExplicit}
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
	if v := upload.String(m, "tls"); v != "" {
		c.TLS = v
	}
	c.CACertificate = upload.String(m, "ca_certificate")
	c.Username, c.Password = in.Credentials["username"], in.Credentials["password"]
	switch {
	case c.Host == "":
		return c, invalid("config.host is required")
	case c.Port < 1 || c.Port > 65535:
		return c, invalid("config.port must be 1–65535")
	case c.TLS != TLSExplicit && c.TLS != TLSNone:
		return c, invalid(`config.tls must be "explicit" or "none"`)
	case c.Username == "" || c.Password == "":
		return c, invalid("credentials.username and credentials.password are required")
	}
	if _, err := c.tlsConfig(); err != nil {
		return c, err
	}
	return c, nil
}

// tlsConfig is nil for tls: none. It verifies the server's certificate
// for Host against the system roots, or ca_certificate's certificates
// alone. Its session cache lets the data connections resume the control
// connection's TLS session, which servers such as vsftpd require.
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.TLS == TLSNone {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12,
		ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	if c.CACertificate != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(c.CACertificate)) {
			return nil, invalid("config.ca_certificate holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func (c Config) addr() string { return net.JoinHostPort(c.Host, fmt.Sprint(c.Port)) }

func invalid(reason string) error {
	return docflow.DestFail(docflow.DestInvalid, reason, nil)
}
