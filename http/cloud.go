package http

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// Cloud providers of the folder browser and the send-to routes, by the
// path segment the spec names them with (decisions.md, Names), and the
// integration type each one delivers through.
var cloudProviders = map[string]string{
	"dropbox":      docflow.IntegrationDropbox,
	"onedrive":     docflow.IntegrationOneDrive,
	"google_drive": docflow.IntegrationGoogleDrive,
}

// CloudFolderLister lists the folders of one cloud drive with an access
// token the caller holds (the integrations' Browser). Errors are docflow
// errors: a refused token EBADREQUEST, a missing folder ENOTFOUND, a
// provider asking to slow down ERATELIMIT, no answer EBADGATEWAY.
type CloudFolderLister interface {
	ListFolders(ctx context.Context, accessToken, path string) (docflow.CloudFolderPage, error)
}

// DestinationSender queues one document's delivery to one of owner's
// destination integrations: the delivery engine's send-to
// (docflow.DestinationStore.SendFileTo). ENOTFOUND when the integration is
// not owner's; EINVALID when it is not an active destination.
type DestinationSender interface {
	SendFileTo(ctx context.Context, fileID int64, owner string, integrationID int64) error
}

// CloudFiles is what the send-to routes ask of the files store.
type CloudFiles interface {
	fileLoader
	// FindFileByStoredFilename returns the file stored under name, or
	// ENOTFOUND.
	FindFileByStoredFilename(ctx context.Context, name string) (*docflow.File, error)
}

// cloudIntegrations finds the caller's destinations.
type cloudIntegrations interface {
	ListIntegrations(ctx context.Context, owner string, f docflow.IntegrationFilter) ([]*docflow.Integration, error)
	GetIntegration(ctx context.Context, owner string, id int64) (*docflow.Integration, error)
}

// CloudDeps are the dependencies of the cloud routes.
type CloudDeps struct {
	// Folders lists folders by provider ("dropbox", "onedrive",
	// "google_drive"); a provider without one has no folder browser.
	Folders map[string]CloudFolderLister
	// Files, Integrations and Deliveries serve the send-to routes, which
	// are mounted only with Deliveries.
	Files        CloudFiles
	Integrations cloudIntegrations
	Deliveries   DestinationSender
}

type cloudHandlers struct {
	s *Server
	d CloudDeps
}

// maxAccessToken bounds the access token the folder browser passes on.
const maxAccessToken = 8 << 10

// MountCloud mounts the cloud folder browser, POST /api/<provider>/list-folders,
// and the spec's send-to routes, POST /send_to_<provider>/ (answering
// task_id "send:<file id>:<integration id>", the delivery the file record
// lists).
func (s *Server) MountCloud(d CloudDeps) {
	h := cloudHandlers{s: s, d: d}
	b := Route{Auth: AuthUser, Limit: LimitDefault}
	for provider, typ := range cloudProviders {
		if l := d.Folders[provider]; l != nil {
			s.Handle("POST", "/api/"+provider+"/list-folders", b, h.listFolders(provider, l), docListFolders)
		}
		if d.Deliveries != nil {
			if d.Files == nil || d.Integrations == nil {
				panic("http: MountCloud's send-to routes need Files and Integrations")
			}
			s.Handle("POST", "/send_to_"+provider+"/", b, h.sendTo(typ), docCloudSendTo)
		}
	}
}

// param reads a request parameter from a JSON body, a form (urlencoded
// or multipart) or, failing those, the query string.
func param(c *fasthttp.RequestCtx, name string) (string, error) {
	ct := string(c.Request.Header.ContentType())
	switch {
	case strings.HasPrefix(ct, "application/json"):
		var body map[string]any
		if len(c.PostBody()) > 0 {
			if err := jsonUnmarshal(c.PostBody(), &body); err != nil {
				return "", docflow.Errorf(docflow.EBADREQUEST, "Invalid JSON body: %s", err.Error())
			}
		}
		switch v := body[name].(type) {
		case string:
			return v, nil
		case nil:
		default:
			return "", invalid(name, "%s must be a string", name)
		}
	case strings.HasPrefix(ct, "multipart/form-data"):
		form, err := c.MultipartForm()
		if err != nil {
			return "", docflow.Errorf(docflow.EBADREQUEST, "Invalid multipart body")
		}
		if v := form.Value[name]; len(v) > 0 {
			return v[0], nil
		}
	default:
		if v := c.PostArgs().Peek(name); v != nil {
			return string(v), nil
		}
	}
	return string(c.QueryArgs().Peek(name)), nil
}

type cloudFolder struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	ID         string `json:"id"`
	ChildCount *int64 `json:"child_count,omitempty"`
}

// listFolders answers the spec's shape: folders, path, and has_more
// (Dropbox, Google Drive) or each folder's child_count (OneDrive).
func (h cloudHandlers) listFolders(provider string, l CloudFolderLister) Handler {
	return func(c *fasthttp.RequestCtx) error {
		token, err := param(c, "access_token")
		if err != nil {
			return err
		}
		token = strings.TrimSpace(token)
		if token == "" {
			return invalid("access_token", "access_token is required")
		}
		if len(token) > maxAccessToken {
			return invalid("access_token", "access_token is longer than %d bytes", maxAccessToken)
		}
		p, err := param(c, "path")
		if err != nil {
			return err
		}
		page, err := l.ListFolders(RequestContext(c), token, p)
		if err != nil {
			return err
		}
		folders := make([]cloudFolder, 0, len(page.Folders))
		for _, f := range page.Folders {
			cf := cloudFolder{Name: f.Name, Path: f.Path, ID: f.ID}
			if provider == "onedrive" {
				n := max(f.ChildCount, 0)
				cf.ChildCount = &n
			}
			folders = append(folders, cf)
		}
		out := map[string]any{"folders": folders, "path": page.Path}
		if provider != "onedrive" {
			out["has_more"] = page.HasMore
		}
		writeJSON(c, fasthttp.StatusOK, out)
		return nil
	}
}

// sendTo queues the delivery of the document file_path names to the
// caller's destination of type typ: integration_id, else the oldest
// active one. file_path is the document's id, its stored file name, or a
// path ending in it.
func (h cloudHandlers) sendTo(typ string) Handler {
	return func(c *fasthttp.RequestCtx) error {
		ctx := RequestContext(c)
		fp, err := param(c, "file_path")
		if err != nil {
			return err
		}
		if fp = strings.TrimSpace(fp); fp == "" {
			return invalid("file_path", "file_path is required")
		}
		f, err := h.findFile(c, fp)
		if err != nil {
			return err
		}
		in, err := h.destination(c, typ)
		if err != nil {
			return err
		}
		if err := h.d.Deliveries.SendFileTo(ctx, f.ID, in.OwnerID, in.ID); err != nil {
			return err
		}
		// The delivery is the file's to this integration: its state shows
		// in the file record's destinations.
		task := fmt.Sprintf("send:%d:%d", f.ID, in.ID)
		h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditFileSendToCloud, Target: "file:" + strconv.FormatInt(f.ID, 10),
			Detail: "to integration " + strconv.FormatInt(in.ID, 10) + " (" + typ + ")"})
		writeJSON(c, fasthttp.StatusOK, map[string]any{"task_id": task, "status": "queued", "file_id": f.ID, "integration_id": in.ID})
		return nil
	}
}

// findFile loads the document fp names and checks that the caller may
// view it.
func (h cloudHandlers) findFile(c *fasthttp.RequestCtx, fp string) (*docflow.File, error) {
	id, err := strconv.ParseInt(fp, 10, 64)
	if err != nil || id <= 0 {
		name := path.Base(strings.ReplaceAll(fp, `\`, "/"))
		if name == "." || name == "/" || name == ".." {
			return nil, docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		f, err := h.d.Files.FindFileByStoredFilename(RequestContext(c), name)
		if err != nil {
			return nil, err
		}
		id = f.ID
	}
	return h.s.fileByID(c, h.d.Files, id, docflow.AccessView)
}

// destination is the caller's active destination of type typ that the
// request chose (integration_id) or, else, the oldest.
func (h cloudHandlers) destination(c *fasthttp.RequestCtx, typ string) (*docflow.Integration, error) {
	ctx := RequestContext(c)
	owner := h.s.tokenOwner(CurrentUser(c))
	raw, err := param(c, "integration_id")
	if err != nil {
		return nil, err
	}
	if raw = strings.TrimSpace(raw); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			return nil, invalid("integration_id", "integration_id must be a positive integer")
		}
		in, err := h.d.Integrations.GetIntegration(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		if in.IntegrationType != typ || in.Direction != docflow.DirectionDestination || !in.IsActive {
			return nil, docflow.Errorf(docflow.EBADREQUEST, "Integration %d is not an active %s destination", id, typ)
		}
		return in, nil
	}
	list, err := h.d.Integrations.ListIntegrations(ctx, owner, docflow.IntegrationFilter{Direction: docflow.DirectionDestination, IntegrationType: typ})
	if err != nil {
		return nil, err
	}
	var pick *docflow.Integration
	for _, in := range list {
		if in.IsActive && (pick == nil || in.ID < pick.ID) {
			pick = in
		}
	}
	if pick == nil {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "No active %s destination: add one with POST /api/integrations/", typ)
	}
	return pick, nil
}
