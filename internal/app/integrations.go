package app

import (
	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/local"
	"docflow/internal/netguard"
	"docflow/storage/postgres"
)

// integrationStore returns the integrations store, sealing credentials
// with the settings' cipher.
func (m *App) integrationStore() *postgres.IntegrationStore {
	return postgres.NewIntegrationStore(m.DB, m.cipher)
}

// integrationDialer is how integrations connect out: internal addresses
// are refused unless named in INTEGRATION_ALLOWED_HOSTS.
func (m *App) integrationDialer() netguard.Dialer {
	return netguard.Dialer{Allowed: func() []string { return docflow.IntegrationAllowedHosts.Get(m.Settings) }}
}

// IntegrationTesters is the one registry of POST /api/integrations/test:
// each supported integration type's tester, keyed by the upper-case type.
// A package that supports a type adds its line here; a type without a
// tester answers "testing <TYPE> is not supported yet".
func (m *App) IntegrationTesters() docflow.IntegrationTesters {
	return docflow.IntegrationTesters{
		docflow.IntegrationLocal: local.Tester{Root: func() string { return docflow.LocalDestinationDir.Get(m.Settings) }},
		docflow.IntegrationIMAP:  imap.Tester{Dial: m.integrationDialer().DialContext, Log: &m.Log},
	}
}
