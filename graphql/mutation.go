package graphql

import (
	"context"

	"docflow"
)

// This file is the Mutation type. Each mutation hands its change to
// Writes, which runs the REST route's own code (with its right from the
// file access rule, checks, audit entries and events): nothing here
// decides who may write what.

// Writes are the REST API's writes, called with the request's context
// (which carries the request they run for). Every error is a docflow
// error as the route would answer it.
type Writes interface {
	// EditMetadata is PATCH /api/files/{id}/metadata with body, the
	// route's JSON body as an object; it returns the changed file.
	EditMetadata(ctx context.Context, fileID int64, body map[string]any) (*docflow.File, error)
	// Reprocess is POST /api/files/{id}/reprocess; it returns the new
	// run's task id.
	Reprocess(ctx context.Context, fileID int64) (taskID string, err error)
	// Share is POST /api/files/{id}/shares.
	Share(ctx context.Context, fileID int64, userID, role string) (*docflow.Share, error)
	// Comment is POST /api/files/{id}/comments.
	Comment(ctx context.Context, fileID int64, body string, parentID *int64) (*docflow.Comment, error)
	// Delete is DELETE /api/files/{id}.
	Delete(ctx context.Context, fileID int64) error
}

// MetadataInput is updateMetadata's input.
type MetadataInput struct {
	Title         *string
	DocumentDate  *string
	Tags          *[]string
	Correspondent *string
	DocumentType  *string
	Fields        *JSON
}

// restBody is the input as PATCH /api/files/{id}/metadata's body: the
// fields given, under the route's names.
func (in MetadataInput) restBody() map[string]any {
	body := map[string]any{}
	for name, v := range map[string]*string{"title": in.Title, "document_date": in.DocumentDate,
		"correspondent": in.Correspondent, "document_type": in.DocumentType} {
		if v != nil {
			body[name] = *v
		}
	}
	if in.Tags != nil {
		body["tags"] = *in.Tags
	}
	if in.Fields != nil {
		body["ai_metadata"] = in.Fields.Value
	}
	return body
}

func (r *rootResolver) UpdateMetadata(ctx context.Context, args struct {
	ID    int32
	Input MetadataInput
}) (*documentResolver, error) {
	f, err := r.a.d.Writes.EditMetadata(ctx, int64(args.ID), args.Input.restBody())
	if err != nil {
		return nil, asGraphQLError(err)
	}
	return newBatch(r.a, []*docflow.File{f}).resolvers()[0], nil
}

type reprocessedResolver struct {
	id   int64
	task string
}

func (r *reprocessedResolver) FileID() int32  { return int32(r.id) }
func (r *reprocessedResolver) TaskID() string { return r.task }

func (r *rootResolver) Reprocess(ctx context.Context, args struct{ ID int32 }) (*reprocessedResolver, error) {
	task, err := r.a.d.Writes.Reprocess(ctx, int64(args.ID))
	if err != nil {
		return nil, asGraphQLError(err)
	}
	return &reprocessedResolver{id: int64(args.ID), task: task}, nil
}

func (r *rootResolver) Share(ctx context.Context, args struct {
	FileID int32
	UserID string
	Role   string
}) (*shareResolver, error) {
	sh, err := r.a.d.Writes.Share(ctx, int64(args.FileID), args.UserID, args.Role)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	return &shareResolver{sh}, nil
}

func (r *rootResolver) Comment(ctx context.Context, args struct {
	FileID   int32
	Body     string
	ParentID *int32
}) (*commentResolver, error) {
	var parent *int64
	if args.ParentID != nil {
		p := int64(*args.ParentID)
		parent = &p
	}
	c, err := r.a.d.Writes.Comment(ctx, int64(args.FileID), args.Body, parent)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	if c.Replies == nil {
		c.Replies = []*docflow.Comment{}
	}
	return &commentResolver{c}, nil
}

func (r *rootResolver) DeleteDocument(ctx context.Context, args struct{ ID int32 }) (bool, error) {
	if err := r.a.d.Writes.Delete(ctx, int64(args.ID)); err != nil {
		return false, asGraphQLError(err)
	}
	return true, nil
}
