package graphql

import (
	"context"
	"slices"

	gqlgo "github.com/graph-gophers/graphql-go"

	"docflow"
)

// This file is the Query type's fields but search and similar: the spec's
// documents, document, pipelines, pipeline, settings, users and user.

// FileReader reads files and what belongs to them (docflow.FileStore,
// with the batch read of logs storage/postgres adds).
type FileReader interface {
	docflow.ShareRoleFinder
	// FindFileByID returns the file, or ENOTFOUND.
	FindFileByID(ctx context.Context, id int64) (*docflow.File, error)
	// FindFiles returns a page of files and the total count.
	FindFiles(ctx context.Context, filter docflow.FileFilter) ([]*docflow.File, int, error)
	// FindFilesBrief is FindFiles for less, appending the page to dst:
	// the records' AI metadata is nil (and their hash, blob keys, source
	// and storage providers are empty).
	FindFilesBrief(ctx context.Context, filter docflow.FileFilter, dst []docflow.File) ([]docflow.File, int, error)
	// ProcessingStatuses summarises each file's current run, by file id.
	ProcessingStatuses(ctx context.Context, files []*docflow.File) (map[int64]docflow.ProcessingStatus, error)
	// ProcessingLogsOfFiles returns the logs of the files among ids, by
	// file id, each oldest first; one statement for any number of files.
	ProcessingLogsOfFiles(ctx context.Context, ids []int64) (map[int64][]*docflow.ProcessingLog, error)
}

// CommentLoader reads the comments of many files at once.
type CommentLoader interface {
	// CommentsOfFiles returns the files' comments, flat in creation
	// order, by file id; one statement for any number of files.
	CommentsOfFiles(ctx context.Context, ids []int64) (map[int64][]*docflow.Comment, error)
}

// ShareLoader reads the shares of many files at once.
type ShareLoader interface {
	// SharesOfFiles returns the files' shares, oldest first, by file id;
	// one statement for any number of files.
	SharesOfFiles(ctx context.Context, ids []int64) (map[int64][]*docflow.Share, error)
}

// PipelineReader reads pipelines (docflow.PipelineStore).
type PipelineReader interface {
	// FindPipelineByID returns the pipeline with its steps, or ENOTFOUND.
	FindPipelineByID(ctx context.Context, id int64) (*docflow.Pipeline, error)
	// FindPipelines returns the owner's and the system pipelines; all
	// with a nil owner returns every pipeline.
	FindPipelines(ctx context.Context, ownerID *string, all bool) ([]*docflow.Pipeline, error)
}

// ProfileReader reads user profiles (docflow.ProfileStore).
type ProfileReader interface {
	// ListProfiles returns a page of users by user id and the total.
	ListProfiles(ctx context.Context, f docflow.ProfileFilter) ([]docflow.UserProfile, int, error)
	// ProfileDetail returns a user's profile, or ENOTFOUND.
	ProfileDetail(ctx context.Context, userID string) (*docflow.ProfileDetail, error)
}

type rootResolver struct{ a *API }

type pageArgs struct {
	Limit  int32
	Offset int32
}

// window returns the part of items that limit and offset select.
func window[T any](items []T, limit, offset int32) []T {
	off := min(max(int(offset), 0), len(items))
	items = items[off:]
	return items[:min(max(int(limit), 0), len(items))]
}

func (r *rootResolver) Documents(ctx context.Context, args struct {
	OwnerID *string
	Limit   int32
	Offset  int32
}) ([]*documentResolver, error) {
	limit := min(max(int(args.Limit), 0), MaxDocuments)
	if limit == 0 {
		return []*documentResolver{}, nil
	}
	u := userOf(ctx)
	filter := docflow.FileFilter{VisibleTo: r.a.access().VisibleTo(u), SortBy: "created_at", SortOrder: "desc",
		Page: 1, PerPage: limit, Offset: max(int(args.Offset), 0)}
	if args.OwnerID != nil {
		if *args.OwnerID == "" {
			return nil, asGraphQLError(docflow.Errorf(docflow.EINVALID, "ownerId must not be empty"))
		}
		filter.OwnerID = *args.OwnerID
	}
	// Only aiMetadata needs more of a record than the brief one holds.
	if gqlgo.HasSelectedField(ctx, "aiMetadata") {
		files, _, err := r.a.d.Files.FindFiles(ctx, filter)
		if err != nil {
			return nil, asGraphQLError(err)
		}
		return newBatch(r.a, files).resolvers(), nil
	}
	l := r.a.takeList(ctx)
	var err error
	if l.files, _, err = r.a.d.Files.FindFilesBrief(ctx, filter, l.files[:0]); err != nil {
		return nil, asGraphQLError(err)
	}
	return r.a.listBatch(l), nil
}

func (r *rootResolver) Document(ctx context.Context, args struct{ ID int32 }) (*documentResolver, error) {
	f, err := r.a.fileFor(ctx, int64(args.ID), docflow.AccessView)
	if err != nil {
		return nil, err
	}
	return newBatch(r.a, []*docflow.File{f}).resolvers()[0], nil
}

// fileFor loads a file and checks that the request's user may do need
// with it: the REST API's fileFor, by the same rule (FileAccess.Check).
func (a *API) fileFor(ctx context.Context, id int64, need docflow.Access) (*docflow.File, error) {
	f, err := a.d.Files.FindFileByID(ctx, id)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	if err := a.access().Check(ctx, a.d.Files, userOf(ctx), f, need); err != nil {
		return nil, asGraphQLError(err)
	}
	return f, nil
}

func (r *rootResolver) Pipelines(ctx context.Context, args struct {
	OwnerID *string
	Limit   int32
	Offset  int32
}) ([]*pipelineResolver, error) {
	u := userOf(ctx)
	if u == nil {
		return nil, asGraphQLError(docflow.Errorf(docflow.EUNAUTHORIZED, "Not authenticated"))
	}
	var ps []*docflow.Pipeline
	var err error
	if u.IsAdmin {
		ps, err = r.a.d.Pipelines.FindPipelines(ctx, nil, true)
	} else {
		var own *string
		if !u.Anonymous && u.ID != "" {
			own = &u.ID
		}
		ps, err = r.a.d.Pipelines.FindPipelines(ctx, own, false)
	}
	if err != nil {
		return nil, asGraphQLError(err)
	}
	if args.OwnerID != nil {
		ps = slices.DeleteFunc(ps, func(p *docflow.Pipeline) bool { return p.OwnerID == nil || *p.OwnerID != *args.OwnerID })
	}
	ps = window(ps, args.Limit, args.Offset)
	out := make([]*pipelineResolver, len(ps))
	for i, p := range ps {
		out[i] = &pipelineResolver{p}
	}
	return out, nil
}

func (r *rootResolver) Pipeline(ctx context.Context, args struct{ ID int32 }) (*pipelineResolver, error) {
	u := userOf(ctx)
	if u == nil {
		return nil, asGraphQLError(docflow.Errorf(docflow.EUNAUTHORIZED, "Not authenticated"))
	}
	p, err := r.a.d.Pipelines.FindPipelineByID(ctx, int64(args.ID))
	if err == nil && !docflow.MayReadOwned(u, p.OwnerID) {
		// As the REST route: another user's pipeline is not revealed.
		err = docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
	}
	if err != nil {
		return nil, asGraphQLError(err)
	}
	return &pipelineResolver{p}, nil
}

func (r *rootResolver) Settings(ctx context.Context, args pageArgs) ([]*settingResolver, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	all, err := r.a.d.Settings.List(ctx)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	// Sensitive settings are left out for every caller, administrators
	// included (the spec's rule for GraphQL).
	all = slices.DeleteFunc(all, func(s *docflow.Setting) bool { return s.Sensitive })
	all = window(all, args.Limit, args.Offset)
	out := make([]*settingResolver, len(all))
	for i, s := range all {
		out[i] = &settingResolver{s}
	}
	return out, nil
}

func (r *rootResolver) Users(ctx context.Context, args pageArgs) ([]*userResolver, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	limit, offset := min(max(int(args.Limit), 0), MaxUsers), max(int(args.Offset), 0)
	if limit == 0 {
		return []*userResolver{}, nil
	}
	// The store pages by number: read the pages the window spans.
	var rows []docflow.UserProfile
	first := offset/limit + 1
	for page := first; page <= first+1; page++ {
		ps, _, err := r.a.d.Profiles.ListProfiles(ctx, docflow.ProfileFilter{Page: page, PerPage: limit})
		if err != nil {
			return nil, asGraphQLError(err)
		}
		rows = append(rows, ps...)
		if len(ps) < limit || offset%limit == 0 {
			break
		}
	}
	rows = window(rows, int32(limit), int32(offset%limit))
	out := make([]*userResolver, len(rows))
	for i := range rows {
		out[i] = &userResolver{&rows[i]}
	}
	return out, nil
}

func (r *rootResolver) User(ctx context.Context, args struct{ UserID string }) (*userResolver, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	d, err := r.a.d.Profiles.ProfileDetail(ctx, args.UserID)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	return &userResolver{&d.UserProfile}, nil
}
