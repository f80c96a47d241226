package app

import (
	"context"
	"fmt"
	"time"

	"docflow"
	"docflow/actors/destinations"
	"docflow/integrations/dropbox"
	"docflow/integrations/email"
	"docflow/integrations/ftp"
	"docflow/integrations/googledrive"
	"docflow/integrations/imap"
	"docflow/integrations/local"
	"docflow/integrations/onedrive"
	"docflow/integrations/paperless"
	"docflow/integrations/s3"
	"docflow/integrations/sftp"
	"docflow/integrations/webdav"
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
		docflow.IntegrationWebDAV: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return webdav.NewIntegration(in, m.integrationDialer())
		},
		docflow.IntegrationNextcloud: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return webdav.NewIntegration(in, m.integrationDialer())
		},
		docflow.IntegrationS3: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return s3.NewIntegration(in, m.integrationDialer(), docflow.AWSRegion.Get(m.Settings))
		},
		docflow.IntegrationSFTP: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return sftp.New(in, m.integrationDialer())
		},
		docflow.IntegrationFTP: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return ftp.New(in, m.integrationDialer())
		},
		docflow.IntegrationEmail: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return email.New(in, m.integrationDialer(), m.Settings)
		},
		// Paperless is a server a user names: its connections follow
		// INTEGRATION_ALLOWED_HOSTS. The cloud drives' API URLs are the
		// operator's settings (cloudClient), read when a client is made.
		docflow.IntegrationPaperless: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return paperless.Open(in, paperless.Options{Dialer: m.integrationDialer()})
		},
		docflow.IntegrationDropbox: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			o := m.dropboxOptions(m.cloudUploads())
			o.OnRefreshToken = m.keepRefreshToken(in)
			return dropbox.Open(in, o)
		},
		docflow.IntegrationOneDrive: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			o := m.oneDriveOptions(m.cloudUploads())
			o.OnRefreshToken = m.keepRefreshToken(in)
			return onedrive.Open(in, o)
		},
		docflow.IntegrationGoogleDrive: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			o := m.googleDriveOptions(m.cloudUploads())
			o.OnRefreshToken = m.keepRefreshToken(in)
			return googledrive.Open(in, o)
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

// startDestinations starts the delivery to storage destinations (serve
// and worker): every such process joins the destinations' consumer group,
// and the process that owns an integration's partition runs its actor.
func (m *App) startDestinations(ctx context.Context) error {
	cfg := destinations.Config{Actors: m.Actors, Brokers: m.Brokers, Store: m.DestinationStore, Blobs: m.Blobs,
		Factories: m.DestinationFactories(), Settings: m.Settings, Publisher: m.Producer, Log: m.Log,
		Metrics: m.Recorder, Partitions: docflow.KafkaPartitions.Get(m.Settings)}
	if m.cfg.Destinations != nil {
		m.cfg.Destinations(&cfg)
	}
	d, err := destinations.New(cfg)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.Start(sctx); err != nil {
		return fmt.Errorf("start destinations: %w", err)
	}
	m.Destinations = d
	m.onDrain("destinations", d.Close)
	return nil
}
