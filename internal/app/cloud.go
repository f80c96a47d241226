package app

import (
	"net/http"
	"time"

	"docflow"
	dfhttp "docflow/http"
	"docflow/integrations/dropbox"
	"docflow/integrations/googledrive"
	"docflow/integrations/onedrive"
	"docflow/integrations/paperless"
	"docflow/internal/netguard"
)

// cloudClient is the HTTP client of the cloud drives' APIs. Their base
// URLs are settings an operator chose (a sovereign cloud, a test server),
// so private addresses are admitted; every connection still goes through
// netguard.
func cloudClient(timeout time.Duration) *http.Client {
	return netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}, Timeout: timeout})
}

func (m *App) dropboxOptions(hc *http.Client) dropbox.Options {
	return dropbox.Options{HTTP: hc, APIURL: m.Settings.Get("DROPBOX_API_URL"), ContentURL: m.Settings.Get("DROPBOX_CONTENT_URL")}
}

func (m *App) oneDriveOptions(hc *http.Client) onedrive.Options {
	return onedrive.Options{HTTP: hc, APIURL: m.Settings.Get("ONEDRIVE_API_URL"), LoginURL: m.Settings.Get("ONEDRIVE_LOGIN_URL")}
}

func (m *App) googleDriveOptions(hc *http.Client) googledrive.Options {
	return googledrive.Options{HTTP: hc, APIURL: m.Settings.Get("GOOGLE_DRIVE_API_URL"), TokenURL: m.Settings.Get("GOOGLE_OAUTH_TOKEN_URL")}
}

// cloudFolders are the cloud folder browser's providers, each reading
// its API's URL from the settings at every listing.
func (m *App) cloudFolders() map[string]dfhttp.CloudFolderLister {
	hc := cloudClient(25 * time.Second)
	return map[string]dfhttp.CloudFolderLister{
		"dropbox":      dropbox.Browser{Options: func() dropbox.Options { return m.dropboxOptions(hc) }},
		"onedrive":     onedrive.Browser{Options: func() onedrive.Options { return m.oneDriveOptions(hc) }},
		"google_drive": googledrive.Browser{Options: func() googledrive.Options { return m.googleDriveOptions(hc) }},
	}
}

// DestinationOpener opens the client of one destination integration.
type DestinationOpener func(in *docflow.Integration) (docflow.DestinationClient, error)

// cloudDestinations opens the clients of PAPERLESS, DROPBOX, GOOGLE_DRIVE
// and ONEDRIVE integrations, with the settings of the moment they are
// opened. Paperless is a server a user names: its connections follow
// INTEGRATION_ALLOWED_HOSTS.
func (m *App) cloudDestinations() map[string]DestinationOpener {
	// NOTE: no overall timeout: a large upload takes as long as it takes;
	// the delivery's context bounds it.
	hc := cloudClient(0)
	return map[string]DestinationOpener{
		docflow.IntegrationDropbox: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return dropbox.Open(in, m.dropboxOptions(hc))
		},
		docflow.IntegrationOneDrive: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return onedrive.Open(in, m.oneDriveOptions(hc))
		},
		docflow.IntegrationGoogleDrive: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return googledrive.Open(in, m.googleDriveOptions(hc))
		},
		docflow.IntegrationPaperless: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return paperless.Open(in, paperless.Options{Dialer: m.integrationDialer()})
		},
	}
}
