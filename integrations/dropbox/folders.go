package dropbox

import (
	"context"
	"errors"
	"strings"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// Browser is the cloud folder browser's Dropbox side: it lists folders
// with an access token the caller holds.
type Browser struct {
	// Options returns the options of each listing (the settings of now).
	Options func() Options
}

// ListFolders lists the folders directly inside path ("" or "/" for the
// root) with accessToken: one page of Dropbox's /files/list_folder (up to
// 2,000 entries), HasMore when Dropbox holds more. Errors are docflow
// errors: a refused token 400, a missing folder 404, rate limited 429,
// anything else 502.
func (b Browser) ListFolders(ctx context.Context, accessToken, path string) (docflow.CloudFolderPage, error) {
	o, err := b.Options().withDefaults()
	if err != nil {
		return docflow.CloudFolderPage{}, err
	}
	a := api{o: o, auth: httpdest.StaticToken{Service: service, HTTP: o.HTTP, Token: accessToken}}
	folder := Folder(path)
	var out struct {
		Entries []struct {
			Tag         string `json:".tag"`
			Name        string `json:"name"`
			ID          string `json:"id"`
			PathDisplay string `json:"path_display"`
		} `json:"entries"`
		HasMore bool `json:"has_more"`
	}
	arg := map[string]any{"path": folder, "recursive": false, "include_deleted": false, "include_mounted_folders": true, "limit": 2000}
	if err := a.rpc(ctx, "files/list_folder", arg, &out); err != nil {
		var f *failure
		notFound := errors.As(err, &f) && strings.Contains(f.summary, "not_found")
		return docflow.CloudFolderPage{}, httpdest.BrowseError(err, notFound)
	}
	page := docflow.CloudFolderPage{Path: folder, HasMore: out.HasMore, Folders: []docflow.CloudFolder{}}
	if page.Path == "" {
		page.Path = "/"
	}
	for _, e := range out.Entries {
		if e.Tag == "folder" {
			page.Folders = append(page.Folders, docflow.CloudFolder{Name: e.Name, Path: e.PathDisplay, ID: e.ID, ChildCount: -1})
		}
	}
	return page, nil
}
