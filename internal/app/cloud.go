package app

import (
	"context"
	"net/http"
	"time"

	"docflow"
	dfhttp "docflow/http"
	"docflow/integrations/dropbox"
	"docflow/integrations/googledrive"
	"docflow/integrations/onedrive"
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
	return dropbox.Options{HTTP: hc, APIURL: docflow.DropboxAPIURL.Get(m.Settings), ContentURL: docflow.DropboxContentURL.Get(m.Settings)}
}

func (m *App) oneDriveOptions(hc *http.Client) onedrive.Options {
	return onedrive.Options{HTTP: hc, APIURL: docflow.OneDriveAPIURL.Get(m.Settings), LoginURL: docflow.OneDriveLoginURL.Get(m.Settings)}
}

func (m *App) googleDriveOptions(hc *http.Client) googledrive.Options {
	return googledrive.Options{HTTP: hc, APIURL: docflow.GoogleDriveAPIURL.Get(m.Settings), TokenURL: docflow.GoogleOAuthTokenURL.Get(m.Settings)}
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

// cloudUploads is the HTTP client of one cloud destination's client: its
// own connections, which the integration's actor holds and its Close
// releases. No overall timeout: a large upload takes as long as it takes,
// and the delivery's context bounds it.
func (m *App) cloudUploads() *http.Client { return cloudClient(0) }

// keepRefreshToken stores a refresh token a provider issued in place of
// the integration's (Microsoft rotates them), so the integration still
// signs in after a restart; a token the owner entered meanwhile stays.
// An unsaved integration (a test) keeps nothing.
func (m *App) keepRefreshToken(in *docflow.Integration) func(string) {
	if in.ID == 0 {
		return nil
	}
	prev := in.Credentials["refresh_token"]
	return func(next string) {
		// NOTE: the client calls this under its token lock, one refresh at
		// a time, so prev needs no lock of its own.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ok, err := m.integrationStore().RotateIntegrationCredential(ctx, in.ID, "refresh_token", prev, next)
		if err != nil {
			m.Log.Warn().Err(err).Int64("integration", in.ID).Msg("could not keep the refresh token the provider issued")
			return
		}
		if ok {
			prev = next
		}
	}
}
