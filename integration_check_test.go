package docflow

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != EINVALID {
		t.Fatalf("want EINVALID, got %v", err)
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestCheckIntegrationDefaultsAndTypes(t *testing.T) {
	c, err := CheckIntegration(IntegrationInput{IntegrationType: " imap ",
		Config:      map[string]any{"host": "mail.example.com", "poll_interval": float64(300)},
		Credentials: map[string]any{"username": "me", "password": "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Type.Type != "IMAP" || c.Type.Direction != DirectionSource {
		t.Fatalf("type %+v", c.Type)
	}
	want := map[string]any{"host": "mail.example.com", "port": int64(993), "security": "tls", "folder": "INBOX",
		"poll_interval": int64(300), "delete_after_process": false, "allow_insecure": false, "max_attachments": int64(50)}
	for k, v := range want {
		if c.Config[k] != v {
			t.Errorf("config.%s = %#v, want %#v", k, c.Config[k], v)
		}
	}
	if _, ok := c.Config["move_to_folder"]; ok {
		t.Error("move_to_folder has no default")
	}
	if c.Credentials["password"] != "pw" {
		t.Errorf("credentials %v", c.Credentials)
	}
	// Destinations get filename_template.
	c, err = CheckIntegration(IntegrationInput{IntegrationType: "local", Direction: "destination", Config: map[string]any{"path": "invoices/2026"}})
	if err != nil || c.Config["filename_template"] != DefaultFilenameTemplate || c.Credentials != nil {
		t.Fatalf("%v %+v", err, c)
	}
	// Every row of the catalogue accepts its required keys.
	for _, name := range IntegrationTypeNames() {
		typ, _ := LookupIntegrationType(name)
		cfg, creds := map[string]any{}, map[string]any{}
		for _, k := range typ.Config {
			if k.Required {
				cfg[k.Name] = sample(k)
			}
		}
		for _, k := range typ.Credentials {
			if k.Required {
				creds[k.Name] = "x"
			}
		}
		if len(typ.OneOfCredentials) > 0 {
			creds[typ.OneOfCredentials[0]] = "x"
		}
		if _, err := CheckIntegration(IntegrationInput{IntegrationType: name, Config: cfg, Credentials: creds}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		_, tls := typ.Key("ca_certificate")
		if tls != typ.TLS {
			t.Errorf("%s: ca_certificate %v, TLS %v", name, tls, typ.TLS)
		}
		_, tmpl := typ.Key("filename_template")
		if tmpl != (typ.Direction == DirectionDestination) {
			t.Errorf("%s: filename_template %v", name, tmpl)
		}
	}
}

func sample(k IntegrationKey) any {
	switch k.Kind {
	case KeyURL:
		return "https://dav.example.com/remote.php/dav"
	case KeyHost:
		return "files.example.com"
	case KeyFingerprint:
		return "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"
	case KeyEmailList:
		return "a@example.com, B <b@example.com>"
	}
	return "x"
}

func TestCheckIntegrationRefusals(t *testing.T) {
	imapCreds := map[string]any{"username": "u", "password": "p"}
	cases := []struct {
		name  string
		in    IntegrationInput
		field string
	}{
		{"unknown type", IntegrationInput{IntegrationType: "GOPHER"}, "integration_type"},
		{"no type", IntegrationInput{}, "integration_type"},
		{"wrong direction", IntegrationInput{IntegrationType: "IMAP", Direction: "DESTINATION", Config: map[string]any{"host": "h"}, Credentials: imapCreds}, "direction"},
		{"unknown config key", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "hots": "x"}, Credentials: imapCreds}, "config.hots"},
		{"port too high", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "port": float64(70000)}, Credentials: imapCreds}, "config.port"},
		{"port zero", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "port": float64(0)}, Credentials: imapCreds}, "config.port"},
		{"port fraction", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "port": 99.5}, Credentials: imapCreds}, "config.port"},
		{"port text", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "port": "993"}, Credentials: imapCreds}, "config.port"},
		{"poll too short", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "poll_interval": float64(5)}, Credentials: imapCreds}, "config.poll_interval"},
		{"poll too long", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "poll_interval": float64(86401)}, Credentials: imapCreds}, "config.poll_interval"},
		{"security enum", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "security": "ssl"}, Credentials: imapCreds}, "config.security"},
		{"host with scheme", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "imaps://h"}, Credentials: imapCreds}, "config.host"},
		{"missing host", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{}, Credentials: imapCreds}, "config.host"},
		{"missing password", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h"}, Credentials: map[string]any{"username": "u"}}, "credentials.password"},
		{"unknown credential", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h"}, Credentials: map[string]any{"username": "u", "password": "p", "token": "t"}}, "credentials.token"},
		{"bool as text", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "allow_insecure": "yes"}, Credentials: imapCreds}, "config.allow_insecure"},
		{"bad PEM", IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"host": "h", "ca_certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}, Credentials: imapCreds}, "config.ca_certificate"},
		{"url scheme", IntegrationInput{IntegrationType: "WEBDAV", Config: map[string]any{"url": "ftp://x"}}, "config.url"},
		{"url no host", IntegrationInput{IntegrationType: "PAPERLESS", Config: map[string]any{"url": "https://"}, Credentials: map[string]any{"token": "t"}}, "config.url"},
		{"fingerprint md5", IntegrationInput{IntegrationType: "SFTP", Config: map[string]any{"host": "h", "host_key_fingerprint": "MD5:aa:bb"}, Credentials: map[string]any{"username": "u", "password": "p"}}, "config.host_key_fingerprint"},
		{"sftp without secret", IntegrationInput{IntegrationType: "SFTP", Config: map[string]any{"host": "h", "host_key_fingerprint": "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"}, Credentials: map[string]any{"username": "u"}}, "credentials.password"},
		{"local escapes", IntegrationInput{IntegrationType: "LOCAL", Config: map[string]any{"path": "a/../../etc"}}, "config.path"},
		{"local credentials", IntegrationInput{IntegrationType: "LOCAL", Config: map[string]any{"path": "a"}, Credentials: map[string]any{"password": "x"}}, "credentials.password"},
		{"template placeholder", IntegrationInput{IntegrationType: "LOCAL", Config: map[string]any{"path": "a", "filename_template": "{owner}.pdf"}}, "config.filename_template"},
		{"template slash", IntegrationInput{IntegrationType: "LOCAL", Config: map[string]any{"path": "a", "filename_template": "../{title}"}}, "config.filename_template"},
		{"email address", IntegrationInput{IntegrationType: "EMAIL", Config: map[string]any{"to": "not an address"}}, "config.to"},
		{"smtp port", IntegrationInput{IntegrationType: "EMAIL", Config: map[string]any{"to": "a@b.c"}, Credentials: map[string]any{"smtp_port": "99999"}}, "credentials.smtp_port"},
		{"ftp tls enum", IntegrationInput{IntegrationType: "FTP", Config: map[string]any{"host": "h", "tls": "implicit"}, Credentials: map[string]any{"username": "u", "password": "p"}}, "config.tls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckIntegration(tc.in)
			if fields := fieldsOf(t, err); !slices.Contains(fields, tc.field) {
				t.Fatalf("fields %v, want %s (%v)", fields, tc.field, err)
			}
		})
	}
}

func TestCheckIntegrationCertificateAndCredentialText(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	c, err := CheckIntegration(IntegrationInput{IntegrationType: "EMAIL",
		Config:      map[string]any{"to": "Ann <ann@example.com>,bob@example.com", "ca_certificate": cert},
		Credentials: map[string]any{"smtp_host": "smtp.example.com", "smtp_port": float64(587)}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config["to"] != "ann@example.com,bob@example.com" || c.Credentials["smtp_port"] != "587" || c.Config["subject"] != "{title}" {
		t.Fatalf("%+v", c)
	}
	// A private key is not a certificate.
	_, err = CheckIntegration(IntegrationInput{IntegrationType: "EMAIL",
		Config: map[string]any{"to": "a@b.c", "ca_certificate": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}})
	if f := fieldsOf(t, err); !slices.Contains(f, "config.ca_certificate") {
		t.Fatal(f)
	}
	// All problems at once.
	_, err = CheckIntegration(IntegrationInput{IntegrationType: "IMAP", Config: map[string]any{"port": float64(0), "x": 1}, Credentials: map[string]any{}})
	f := fieldsOf(t, err)
	for _, want := range []string{"config.x", "config.host", "config.port", "credentials.username", "credentials.password"} {
		if !slices.Contains(f, want) {
			t.Errorf("fields %v lack %s", f, want)
		}
	}
}

func TestIntegrationQuotaByTier(t *testing.T) {
	for tier, want := range map[string][2]int{"free": {1, 0}, "": {1, 0}, "bogus": {1, 0}, "starter": {2, 1},
		"professional": {5, 3}, "POWER": {10, Unlimited}} {
		q := IntegrationQuotaFor(tier)
		if q.Destinations != want[0] || q.Sources != want[1] {
			t.Errorf("%q: %+v", tier, q)
		}
	}
	q := IntegrationQuotaFor("free")
	if !q.Allows(DirectionDestination, 0) || q.Allows(DirectionDestination, 1) || q.Allows(DirectionSource, 0) {
		t.Error("free")
	}
	if !IntegrationQuotaFor("power").Allows(DirectionSource, 1_000_000) {
		t.Error("power sources are unlimited")
	}
	if !strings.HasPrefix(QuotaDetail(DirectionDestination), "plan limit reached, remove a destination or upgrade") {
		t.Error(QuotaDetail(DirectionDestination))
	}
	ok, msg := IntegrationTesters{}.Test(context.Background(), &Integration{IntegrationType: "S3"})
	if ok || msg != "testing S3 is not supported yet" {
		t.Fatal(ok, msg)
	}
}
