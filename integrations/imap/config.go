// Package imap is the client of IMAP sources: it logs in to a mailbox over
// TLS, STARTTLS or (to loopback, or when allowed) plain TCP, waits for new
// mail with IDLE where the server offers it, fetches the unseen mails,
// streams each supported attachment to a Sink (docflow's intake) and
// flags, moves or deletes the mails it finished. Every network operation
// is bounded by a timeout; the client is driven by one goroutine at a time
// (the integration actor that owns it).
package imap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"docflow"
)

// Security modes of the connection.
const (
	SecurityTLS      = "tls"
	SecurityStartTLS = "starttls"
	SecurityNone     = "none"
)

// Defaults and bounds (decisions.md, Integrations: IMAP).
const (
	DefaultPort           = 993
	DefaultPollInterval   = 60 * time.Second
	MinPollInterval       = 10 * time.Second
	MaxPollInterval       = 86400 * time.Second
	DefaultMaxAttachments = 50
	DefaultDialTimeout    = 15 * time.Second
	// DefaultIOTimeout bounds every command: a read or write that makes no
	// progress for this long fails the connection.
	DefaultIOTimeout = 60 * time.Second
)

// Config is one IMAP source's configuration.
type Config struct {
	IntegrationID      int64
	Host               string
	Port               int
	Security           string
	Folder             string
	PollInterval       time.Duration
	MoveToFolder       string
	DeleteAfterProcess bool
	AllowInsecure      bool
	MaxAttachments     int
	CACertificate      string
	Username, Password string
	// DialTimeout bounds the TCP connect and the TLS handshake; IOTimeout
	// every read and write outside IDLE.
	DialTimeout, IOTimeout time.Duration
	// Dial opens the TCP connection: the process's netguard dialer, which
	// refuses internal addresses unless INTEGRATION_ALLOWED_HOSTS admits
	// them (default a netguard.Dialer admitting none).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ParseConfig reads an IMAP integration's config and credentials, with
// the defaults of decisions.md. It checks what the client needs to run;
// the integrations API validates the keys themselves.
func ParseConfig(in *docflow.Integration) (Config, error) {
	c := Config{IntegrationID: in.ID, Port: DefaultPort, Security: SecurityTLS, Folder: "INBOX",
		PollInterval: DefaultPollInterval, MaxAttachments: DefaultMaxAttachments,
		DialTimeout: DefaultDialTimeout, IOTimeout: DefaultIOTimeout}
	m := in.Config
	var err error
	str := func(k string) string { s, _ := m[k].(string); return strings.TrimSpace(s) }
	c.Host = str("host")
	if v := str("security"); v != "" {
		c.Security = strings.ToLower(v)
	}
	if v := str("folder"); v != "" {
		c.Folder = v
	}
	c.MoveToFolder = str("move_to_folder")
	c.CACertificate = str("ca_certificate")
	if c.Port, err = intKey(m, "port", DefaultPort); err != nil {
		return c, err
	}
	secs, err := intKey(m, "poll_interval", int(DefaultPollInterval/time.Second))
	if err != nil {
		return c, err
	}
	c.PollInterval = time.Duration(secs) * time.Second
	if c.MaxAttachments, err = intKey(m, "max_attachments", DefaultMaxAttachments); err != nil {
		return c, err
	}
	if c.DeleteAfterProcess, err = boolKey(m, "delete_after_process"); err != nil {
		return c, err
	}
	if c.AllowInsecure, err = boolKey(m, "allow_insecure"); err != nil {
		return c, err
	}
	c.Username, c.Password = in.Credentials["username"], in.Credentials["password"]
	return c, c.check()
}

func (c Config) check() error {
	switch {
	case c.Host == "":
		return errors.New("imap: host is required")
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("imap: port %d out of range", c.Port)
	case c.Security != SecurityTLS && c.Security != SecurityStartTLS && c.Security != SecurityNone:
		return fmt.Errorf("imap: security %q is not tls, starttls or none", c.Security)
	case c.Security == SecurityNone && !c.AllowInsecure && !loopback(c.Host):
		return errors.New("imap: security none is allowed to a loopback address only, unless allow_insecure")
	case c.PollInterval < MinPollInterval || c.PollInterval > MaxPollInterval:
		return fmt.Errorf("imap: poll_interval %v out of range (10–86400 s)", c.PollInterval)
	case c.MaxAttachments < 1:
		return errors.New("imap: max_attachments must be at least 1")
	case c.Username == "" || c.Password == "":
		return errors.New("imap: username and password are required")
	}
	if c.CACertificate != "" {
		if _, err := c.tlsConfig(); err != nil {
			return err
		}
	}
	return nil
}

// tlsConfig verifies the server against the system roots, or against
// ca_certificate alone when given.
func (c Config) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12}
	if c.CACertificate != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(c.CACertificate)) {
			return nil, errors.New("imap: ca_certificate holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// loopback tells a host that names this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// intKey reads a whole number given as a JSON number or a numeric string.
func intKey(m map[string]any, k string, def int) (int, error) {
	switch v := m[k].(type) {
	case nil:
		return def, nil
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1e9 {
			return 0, fmt.Errorf("imap: %s must be a whole number", k)
		}
		return int(v), nil
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("imap: %s must be a whole number", k)
		}
		return n, nil
	}
	return 0, fmt.Errorf("imap: %s must be a whole number", k)
}

func boolKey(m map[string]any, k string) (bool, error) {
	switch v := m[k].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("imap: %s must be true or false", k)
		}
		return b, nil
	}
	return false, fmt.Errorf("imap: %s must be true or false", k)
}
