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

// DestinationFactories is the one registry of destination clients: each
// destination type's constructor, keyed by the upper-case type. A package
// that delivers to a type adds its line here; the type then gets its
// tester (POST /api/integrations/test) and its delivery actor. Every
// client connects through integrationDialer.
func (m *App) DestinationFactories() docflow.DestinationFactories {
	return docflow.DestinationFactories{
		docflow.IntegrationLocal: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return local.NewClient(func() string { return docflow.LocalDestinationDir.Get(m.Settings) }, in)
		},
	}
}

// IntegrationTesters is the one registry of POST /api/integrations/test:
// each supported integration type's tester, keyed by the upper-case type:
// the sources' own, and a docflow.DestinationTester for every destination
// type of DestinationFactories. A type without a tester answers "testing
// <TYPE> is not supported yet".
func (m *App) IntegrationTesters() docflow.IntegrationTesters {
	t := docflow.IntegrationTesters{
		docflow.IntegrationIMAP: imap.Tester{Dial: m.integrationDialer().DialContext, Log: &m.Log},
	}
	for typ, f := range m.DestinationFactories() {
		t[typ] = docflow.DestinationTester{New: f, Log: func(in *docflow.Integration, err error) {
			m.Log.Info().Err(err).Int64("integration", in.ID).Str("type", in.IntegrationType).
				Msg("destination test failed")
		}}
	}
	return t
}
