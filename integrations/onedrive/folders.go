package onedrive

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// maxFolderPages bounds how many pages of children one listing follows.
const maxFolderPages = 10

// Browser is the cloud folder browser's OneDrive side: it lists folders
// with an access token the caller holds.
type Browser struct {
	// Options returns the options of each listing (the settings of now).
	Options func() Options
}

// ListFolders lists the folders directly inside path ("" or "/" for the
// drive's root) with accessToken, with each folder's child count. Errors
// are docflow errors: a refused token 400, a missing folder 404, rate
// limited 429, anything else 502.
func (b Browser) ListFolders(ctx context.Context, accessToken, path string) (docflow.CloudFolderPage, error) {
	o, err := b.Options().withDefaults()
	if err != nil {
		return docflow.CloudFolderPage{}, err
	}
	a := api{o: o, auth: httpdest.StaticToken{Service: service, HTTP: o.HTTP, Token: accessToken}}
	folder := Folder(path)
	page := docflow.CloudFolderPage{Path: folder, Folders: []docflow.CloudFolder{}}
	if page.Path == "" {
		page.Path = "/"
	}
	base, _ := url.Parse(o.APIURL)
	next := o.APIURL + "/me/drive/" + itemPath(folder) + "/children?" + url.Values{"$select": {"id,name,folder"}, "$top": {"200"}}.Encode()
	for i := 0; next != "" && i < maxFolderPages; i++ {
		var out struct {
			Value []struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Folder *struct {
					ChildCount int64 `json:"childCount"`
				} `json:"folder"`
			} `json:"value"`
			Next string `json:"@odata.nextLink"`
		}
		if err := a.call(ctx, http.MethodGet, next, "", nil, &out); err != nil {
			var f *failure
			notFound := errors.As(err, &f) && (f.code == "itemNotFound" || f.Class == docflow.DestInvalid && strings.Contains(f.Reason, "HTTP 404"))
			return docflow.CloudFolderPage{}, httpdest.BrowseError(err, notFound)
		}
		for _, v := range out.Value {
			if v.Folder != nil {
				page.Folders = append(page.Folders, docflow.CloudFolder{Name: v.Name, Path: folder + "/" + v.Name, ID: v.ID, ChildCount: v.Folder.ChildCount})
			}
		}
		next = ""
		// NOTE: the next page is followed only on the configured API host,
		// so an answer cannot send the caller's token elsewhere.
		if u, err := url.Parse(out.Next); err == nil && out.Next != "" && u.Scheme == base.Scheme && u.Host == base.Host {
			next = out.Next
		}
	}
	page.HasMore = next != ""
	return page, nil
}
