package docflow

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
)

// IntegrationTLS returns the TLS configuration of an integration whose
// type speaks TLS: the server verified against the system's roots, or
// against config.ca_certificate's certificates alone when it is set (a
// server with a private CA); TLS 1.2 at least. serverName, when not
// empty, is the name the certificate must carry (else the dialled host).
func IntegrationTLS(config map[string]any, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	pem, _ := config["ca_certificate"].(string)
	if strings.TrimSpace(pem) == "" {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pem)) {
		return nil, errors.New("config.ca_certificate holds no PEM certificate")
	}
	cfg.RootCAs = pool
	return cfg, nil
}
