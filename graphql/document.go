package graphql

import (
	"context"
	"slices"
	"sync"

	gqlgo "github.com/graph-gophers/graphql-go"

	"docflow"
)

// This file is the Document type and its batch loading.
//
// NOTE: the documents of one answer share a batch. The first of them
// asked for its comments (shares, logs, processing status) reads those
// of every document of the batch in one statement, and the others take
// theirs from it: `documents(limit: 100) { comments { … } }` runs one
// statement for the list and one per kind of thing asked, not one per
// document. Nothing waits for a time window, as a data loader would: the
// batch is known when the list is read.

// batch is the documents of one answer and what was loaded for them.
type batch struct {
	a     *API
	files []*docflow.File
	ids   []int64

	status   lazy[map[int64]docflow.ProcessingStatus]
	logs     lazy[map[int64][]*docflow.ProcessingLog]
	comments lazy[map[int64][]*docflow.Comment]
	shares   lazy[map[int64][]*docflow.Share]

	threadMu sync.Mutex
	threaded map[int64][]*docflow.Comment
}

// lazy is a value loaded once, by whoever asks first.
type lazy[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (l *lazy[T]) get(load func() (T, error)) (T, error) {
	l.once.Do(func() { l.v, l.err = load() })
	return l.v, l.err
}

func newBatch(a *API, files []*docflow.File) *batch {
	b := &batch{a: a, files: files, ids: make([]int64, len(files))}
	for i, f := range files {
		b.ids[i] = f.ID
	}
	return b
}

// resolvers returns the batch's documents' resolvers.
func (b *batch) resolvers() []*documentResolver {
	return b.fill(make([]documentResolver, len(b.files)), make([]*documentResolver, 0, len(b.files)))
}

// fill sets rs (one per document of the batch) to the documents'
// resolvers and returns out with pointers to them appended: one array
// for them all, not one allocation each.
func (b *batch) fill(rs []documentResolver, out []*documentResolver) []*documentResolver {
	for i, f := range b.files {
		rs[i] = documentResolver{ID: int32(f.ID), OriginalFilename: f.OriginalFilename, MimeType: f.MimeType,
			FileSize: float64(f.FileSize), DocumentTitle: f.DocumentTitle, OwnerID: f.OwnerID, Status: f.Status,
			OcrQualityScore: f.OCRQualityScore, f: f, b: b}
		out = append(out, &rs[i])
	}
	return out
}

// docList holds the arrays one list of documents is read into: its
// records, pointers to them, their resolvers and the list of those. A
// request takes them from API.lists and gives them back once its answer
// is written (Execute).
//
// NOTE: a list of 100 documents allocated 120 KB, and the garbage
// collector ran about ten times as often during GraphQL lists as during
// the REST listing of the same page, its pauses showing in the tail
// latency; the records and resolvers were 45 KB of it. The rest is the
// executor's own.
type docList struct {
	files []docflow.File
	ptrs  []*docflow.File
	rs    []documentResolver
	out   []*documentResolver
}

// reset empties the arrays, dropping what they point to.
func (l *docList) reset() {
	clear(l.files[:cap(l.files)])
	clear(l.ptrs[:cap(l.ptrs)])
	clear(l.rs[:cap(l.rs)])
	clear(l.out[:cap(l.out)])
	l.files, l.ptrs, l.rs, l.out = l.files[:0], l.ptrs[:0], l.rs[:0], l.out[:0]
}

// listBatch makes the batch of the records read into l and returns its
// resolvers, all in l's arrays.
func (a *API) listBatch(l *docList) []*documentResolver {
	l.ptrs = l.ptrs[:0]
	for i := range l.files {
		l.ptrs = append(l.ptrs, &l.files[i])
	}
	l.rs = slices.Grow(l.rs[:0], len(l.files))[:len(l.files)]
	l.out = newBatch(a, l.ptrs).fill(l.rs, l.out[:0])
	return l.out
}

// documentResolver resolves a Document. Its exported fields are the
// schema fields of the same names, read by the executor as fields
// (UseFieldResolvers); the others are its methods.
//
// NOTE: a method is called through reflection, which cost a quarter of
// the executor's time for a list of 100 documents with three plain
// fields.
type documentResolver struct {
	ID               int32
	OriginalFilename string
	MimeType         string
	FileSize         float64
	DocumentTitle    *string
	OwnerID          *string
	Status           string
	OcrQualityScore  *float64

	f *docflow.File
	b *batch
}

func (d *documentResolver) CreatedAt() gqlgo.Time { return gqlgo.Time{Time: d.f.CreatedAt} }
func (d *documentResolver) UpdatedAt() gqlgo.Time { return gqlgo.Time{Time: d.f.UpdatedAt} }
func (d *documentResolver) PipelineID() *int32    { return int32Ptr(d.f.PipelineID) }
func (d *documentResolver) IsDuplicate() bool     { return d.f.Status == docflow.StatusDuplicate }
func (d *documentResolver) DuplicateOf() *int32   { return int32Ptr(d.f.DuplicateOf) }

func (d *documentResolver) Language() *string {
	if d.f.Language == "" {
		return nil
	}
	return &d.f.Language
}

func (d *documentResolver) AiMetadata() *JSON {
	if d.f.AIMetadata == nil {
		return nil
	}
	return &JSON{d.f.AIMetadata}
}

func (d *documentResolver) ProcessingStatus(ctx context.Context) (*statusResolver, error) {
	all, err := d.b.status.get(func() (map[int64]docflow.ProcessingStatus, error) {
		return d.b.a.d.Files.ProcessingStatuses(ctx, d.b.files)
	})
	if err != nil {
		return nil, asGraphQLError(err)
	}
	st, ok := all[d.f.ID]
	if !ok {
		st = docflow.ProcessingStatus{Status: d.f.Status}
	}
	return &statusResolver{st}, nil
}

func (d *documentResolver) Logs(ctx context.Context) ([]*logResolver, error) {
	all, err := d.b.logs.get(func() (map[int64][]*docflow.ProcessingLog, error) {
		return d.b.a.d.Files.ProcessingLogsOfFiles(ctx, d.b.ids)
	})
	if err != nil {
		return nil, asGraphQLError(err)
	}
	logs := all[d.f.ID]
	out := make([]*logResolver, len(logs))
	for i, l := range logs {
		out[i] = &logResolver{l}
	}
	return out, nil
}

// Comments are the document's threads; whoever may see a document reads
// its comments, as GET /api/files/{id}/comments.
func (d *documentResolver) Comments(ctx context.Context) ([]*commentResolver, error) {
	all, err := d.b.comments.get(func() (map[int64][]*docflow.Comment, error) {
		return d.b.a.d.Comments.CommentsOfFiles(ctx, d.b.ids)
	})
	if err != nil {
		return nil, asGraphQLError(err)
	}
	// NOTE: threading links the batch's own records: each document's
	// comments are threaded once, by the first of its resolvers to ask.
	return commentResolvers(d.b.threads(d.f.ID, all[d.f.ID])), nil
}

// threads are the threaded comments of one file of the batch, built
// once however often its comments are asked for.
func (b *batch) threads(fileID int64, flat []*docflow.Comment) []*docflow.Comment {
	b.threadMu.Lock()
	defer b.threadMu.Unlock()
	if b.threaded == nil {
		b.threaded = map[int64][]*docflow.Comment{}
	}
	if t, ok := b.threaded[fileID]; ok {
		return t
	}
	t := docflow.ThreadComments(flat)
	b.threaded[fileID] = t
	return t
}

// Shares are for those who may manage them, as GET
// /api/files/{id}/shares: the owner and administrators (the share right
// of the file access rule); anyone else gets null and an error.
func (d *documentResolver) Shares(ctx context.Context) (*[]*shareResolver, error) {
	if err := d.b.a.access().Check(ctx, d.b.a.d.Files, userOf(ctx), d.f, docflow.AccessShare); err != nil {
		return nil, asGraphQLError(err)
	}
	all, err := d.b.shares.get(func() (map[int64][]*docflow.Share, error) {
		return d.b.a.d.Shares.SharesOfFiles(ctx, d.b.ids)
	})
	if err != nil {
		return nil, asGraphQLError(err)
	}
	shares := all[d.f.ID]
	out := make([]*shareResolver, len(shares))
	for i, s := range shares {
		out[i] = &shareResolver{s}
	}
	return &out, nil
}

func int32Ptr(v *int64) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}
