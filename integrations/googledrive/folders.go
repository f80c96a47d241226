package googledrive

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// Browser is the cloud folder browser's Google Drive side: it lists
// folders with an access token the caller holds.
type Browser struct {
	// Options returns the options of each listing (the settings of now).
	Options func() Options
}

// ListFolders lists the folders directly inside the folder whose id is
// path ("" or "/" for My Drive's root): one page of up to 1,000, by name,
// HasMore when Drive holds more. Drive has no paths: each folder's Path
// is its id, what the browser sends back to list it. Errors are docflow
// errors: a refused token 400, a missing folder 404, rate limited 429,
// anything else 502.
func (b Browser) ListFolders(ctx context.Context, accessToken, path string) (docflow.CloudFolderPage, error) {
	o, err := b.Options().withDefaults()
	if err != nil {
		return docflow.CloudFolderPage{}, err
	}
	a := api{o: o, auth: httpdest.StaticToken{Service: service, HTTP: o.HTTP, Token: accessToken}}
	parent := strings.Trim(strings.TrimSpace(path), "/")
	if parent == "" {
		parent = "root"
	}
	q := url.Values{
		"q":                         {quote(parent) + " in parents and mimeType = " + quote(FolderMIME) + " and trashed = false"},
		"fields":                    {"nextPageToken,files(id,name)"},
		"orderBy":                   {"name"},
		"pageSize":                  {"1000"},
		"supportsAllDrives":         {"true"},
		"includeItemsFromAllDrives": {"true"},
	}
	var out struct {
		Next  string      `json:"nextPageToken"`
		Files []driveFile `json:"files"`
	}
	if _, err := a.call(ctx, http.MethodGet, o.APIURL+"/drive/v3/files?"+q.Encode(), nil, nil, &out); err != nil {
		var f *failure
		notFound := errors.As(err, &f) && f.reason == "notFound"
		return docflow.CloudFolderPage{}, httpdest.BrowseError(err, notFound)
	}
	page := docflow.CloudFolderPage{Path: parent, HasMore: out.Next != "", Folders: []docflow.CloudFolder{}}
	for _, f := range out.Files {
		page.Folders = append(page.Folders, docflow.CloudFolder{Name: f.Name, Path: f.ID, ID: f.ID, ChildCount: -1})
	}
	return page, nil
}
