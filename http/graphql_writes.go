package http

import (
	"context"
	"encoding/json"

	"github.com/valyala/fasthttp"

	"docflow"
)

// GraphQLWrites are the REST routes' writes as the GraphQL mutations make
// them (package graphql's Writes): each finds the file with the right the
// route asks (fileByID, the file access rule) and runs the route's own
// code, with the request's user, audit entries and events. They run only
// inside POST /graphql, whose context carries the request.
type GraphQLWrites struct{ s *Server }

// GraphQLWrites returns the writes of the files and collaboration routes;
// MountFiles and MountCollab come first.
func (s *Server) GraphQLWrites() *GraphQLWrites {
	if s.files == nil || s.collab == nil {
		panic("http: GraphQLWrites needs MountFiles and MountCollab first")
	}
	return &GraphQLWrites{s: s}
}

// request returns the POST /graphql request ctx carries.
func (w *GraphQLWrites) request(ctx context.Context) (*fasthttp.RequestCtx, error) {
	c, ok := ctx.Value(graphqlRequestKey{}).(*fasthttp.RequestCtx)
	if !ok {
		return nil, docflow.Errorf(docflow.EINTERNAL, "GraphQL write outside a request")
	}
	return c, nil
}

// EditMetadata is PATCH /api/files/{id}/metadata, body its JSON body as
// an object.
func (w *GraphQLWrites) EditMetadata(ctx context.Context, fileID int64, body map[string]any) (*docflow.File, error) {
	c, err := w.request(ctx)
	if err != nil {
		return nil, err
	}
	f, err := w.s.fileByID(c, w.s.files.d.Files, fileID, docflow.AccessEdit)
	if err != nil {
		return nil, err
	}
	raw := make(map[string]json.RawMessage, len(body))
	for k, v := range body {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, invalid(k, "%s is not a JSON value", k)
		}
		raw[k] = b
	}
	edit, err := metadataEditFrom(raw)
	if err != nil {
		return nil, err
	}
	updated, _, err := w.s.files.applyMetadataEdit(c, f, edit)
	return updated, err
}

// Reprocess is POST /api/files/{id}/reprocess.
func (w *GraphQLWrites) Reprocess(ctx context.Context, fileID int64) (string, error) {
	c, err := w.request(ctx)
	if err != nil {
		return "", err
	}
	f, err := w.s.fileByID(c, w.s.files.d.Files, fileID, docflow.AccessEdit)
	if err != nil {
		return "", err
	}
	return w.s.files.reprocessFile(c, f, false)
}

// Share is POST /api/files/{id}/shares.
func (w *GraphQLWrites) Share(ctx context.Context, fileID int64, userID, role string) (*docflow.Share, error) {
	c, err := w.request(ctx)
	if err != nil {
		return nil, err
	}
	f, err := w.s.collab.shareWriteOn(c, fileID)
	if err != nil {
		return nil, err
	}
	return w.s.collab.shareFile(c, f, &userID, &role)
}

// Comment is POST /api/files/{id}/comments.
func (w *GraphQLWrites) Comment(ctx context.Context, fileID int64, body string, parentID *int64) (*docflow.Comment, error) {
	c, err := w.request(ctx)
	if err != nil {
		return nil, err
	}
	f, err := w.s.fileByID(c, w.s.collab.d.Files, fileID, docflow.AccessComment)
	if err != nil {
		return nil, err
	}
	ans, err := w.s.collab.commentOn(c, f, &body, parentID)
	if err != nil {
		return nil, err
	}
	return ans.Comment, nil
}

// Delete is DELETE /api/files/{id}.
func (w *GraphQLWrites) Delete(ctx context.Context, fileID int64) error {
	c, err := w.request(ctx)
	if err != nil {
		return err
	}
	if err := w.s.files.deletionAllowed(); err != nil {
		return err
	}
	f, err := w.s.fileByID(c, w.s.files.d.Files, fileID, docflow.AccessDelete)
	if err != nil {
		return err
	}
	return w.s.files.deleteFile(c, f)
}
