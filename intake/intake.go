// Package intake brings documents into docflow from every channel (HTTP
// uploads, URLs, processall, watch folders, later IMAP): it streams the
// bytes to the blob store while hashing them, enforces size, type and
// per-user limits, and decides the record: the file and its id, its run,
// its messages, deduplication and the daily limit. It hands that record to
// storage as data (docflow.IngestRecord), which writes it in one
// transaction and enforces the decisions there.
package intake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/streams"
)

// sniffLen is how many leading bytes decide the content type (the
// mimetype library's default read limit).
const sniffLen = 3072

// Store is what intake reads and writes in storage
// (postgres.FileStore). Intake decides; the store records what it is
// handed, as data, and enforces the decisions atomically.
type Store interface {
	// NewFileID draws the id of a file about to be ingested.
	NewFileID(ctx context.Context) (int64, error)
	// Ingest records rec in one transaction and returns the original when
	// the file is an exact duplicate; ERATELIMIT past rec.DailyLimit,
	// ENOTFOUND for an unknown pipeline.
	Ingest(ctx context.Context, rec docflow.IngestRecord) (dupOf *docflow.File, err error)
	// UploadPolicy reads the uploader's block flag, daily limit and count.
	UploadPolicy(ctx context.Context, owner string) (docflow.UploadPolicy, error)
	// BlobInUse reports whether any file references the blob key.
	BlobInUse(ctx context.Context, key string) (bool, error)
	// FindFilesByIDs returns the files that exist among ids, in id order.
	FindFilesByIDs(ctx context.Context, ids []int64) ([]*docflow.File, error)
	// RequeueFiles queues each item's file again with its run and
	// messages, in one transaction; files that vanished are in missing.
	RequeueFiles(ctx context.Context, items []docflow.Requeue) (done []*docflow.File, missing []int64, err error)
	// WatchSeenExists reports whether a watch folder already took in w.
	WatchSeenExists(ctx context.Context, w docflow.WatchSeen) (bool, error)
	// RecordWatchSeen remembers a watch-folder file that was refused.
	RecordWatchSeen(ctx context.Context, w docflow.WatchSeen) error
	// CountUnfinishedRuns is the queue depth of the load rule.
	CountUnfinishedRuns(ctx context.Context) (int, error)
}

// Config is what the service needs.
type Config struct {
	Files    Store
	Blobs    docflow.BlobStore
	Settings docflow.SettingsStore
	Log      zerolog.Logger
	// WorkDir is WORKDIR, the parent of the default processall folder.
	WorkDir string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// QueueDepth reports queued work for the load rule (default: the
	// unfinished runs in Postgres).
	QueueDepth func(ctx context.Context) (int, error)
	// LoadPerCPU reports the load average per CPU (default /proc/loadavg).
	LoadPerCPU func() float64
	// Resolver resolves URL hosts for the fetcher (default net.DefaultResolver).
	Resolver Resolver
	// Recorder receives one MetricIntake per offered document (nil = none).
	Recorder docflow.Recorder
	// SharedLimits holds the per-user upload window across every api
	// process sharing the database (nil: per process, in memory).
	SharedLimits SharedLimiter
}

// SharedLimiter is a rate limit every process shares (internal/ratelimit
// over PostgreSQL, wired by internal/app). Take spends one upload of key
// under limit per period: ok false when the shared window is full; an
// error when the shared store failed, and then this process's in-memory
// window decides (fail open to a per-process limit; the limiter logs the
// outage).
type SharedLimiter interface {
	Take(ctx context.Context, key string, limit int, period time.Duration) (ok bool, retryAfter time.Duration, err error)
}

// Resolver is the part of *net.Resolver the URL fetcher uses.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Service implements docflow.IntakeService.
type Service struct {
	cfg    Config
	log    zerolog.Logger
	now    func() time.Time
	window *window
	load   *loadGauge
	client *http.Client
}

var _ docflow.IntakeService = (*Service)(nil)

// New returns the service; it refuses missing dependencies.
func New(cfg Config) (*Service, error) {
	if cfg.Files == nil || cfg.Blobs == nil || cfg.Settings == nil {
		return nil, errors.New("intake: Files, Blobs and Settings are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.QueueDepth == nil {
		cfg.QueueDepth = cfg.Files.CountUnfinishedRuns
	}
	if cfg.LoadPerCPU == nil {
		cfg.LoadPerCPU = procLoadPerCPU
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	s := &Service{cfg: cfg, log: cfg.Log, now: cfg.Now, window: newWindow()}
	s.load = &loadGauge{depth: cfg.QueueDepth, load: cfg.LoadPerCPU, now: cfg.Now}
	s.client = newFetchClient(s)
	return s, nil
}

// Close releases idle fetch connections.
func (s *Service) Close() { s.client.CloseIdleConnections() }

func ownerOf(u *docflow.User) *string {
	if u == nil || u.Anonymous || u.ID == "" {
		return nil
	}
	id := u.ID
	return &id
}

// windowed reports whether the per-user sliding window applies: to
// ui-upload and process-url only.
func windowed(channel string) bool {
	return channel == docflow.ChannelUIUpload || channel == docflow.ChannelURL
}

// Admit checks the uploader before the body is read. The per-user window
// is a rate limit: RATE_LIMITING_ENABLED=false switches it off (the
// profile's daily limit is not one and stays). The anonymous single user
// of an instance without authentication is held to RATE_LIMIT_UPLOAD, the
// upload endpoints' own limit, not to the per-user window, which is meant
// to share a busy machine between users.
func (s *Service) Admit(ctx context.Context, user *docflow.User, channel string) error {
	owner := ownerOf(user)
	if owner != nil {
		if _, err := s.policy(ctx, *owner, true); err != nil {
			return err
		}
	}
	if !windowed(channel) || !docflow.RateLimitingEnabled.Get(s.cfg.Settings) {
		return nil
	}
	if owner == nil {
		r, err := docflow.ParseRate(docflow.RateLimitUpload.Get(s.cfg.Settings))
		if err != nil {
			return nil // the HTTP layer logs an unusable RATE_LIMIT_UPLOAD
		}
		if !s.takeWindow(ctx, "", r.Period, r.N) {
			e := docflow.Errorf(docflow.ERATELIMIT, "Rate limit exceeded: %d per %s", r.N, r.Unit)
			e.RetryAfter = max(1, int(r.Period.Seconds())/2)
			return e
		}
		return nil
	}
	base := docflow.UploadRateLimitPerUser.Get(s.cfg.Settings)
	secs := docflow.UploadRateLimitWindow.Get(s.cfg.Settings)
	if base <= 0 || secs <= 0 {
		return nil
	}
	limit := effectiveLimit(base, s.load.current(ctx))
	if !s.takeWindow(ctx, *owner, time.Duration(secs)*time.Second, limit) {
		e := docflow.Errorf(docflow.ERATELIMIT, "Rate limit exceeded: %d per %d seconds", limit, secs)
		e.RetryAfter = max(1, secs/2)
		return e
	}
	return nil
}

// takeWindow counts one upload of owner ("" the anonymous single user)
// when fewer than limit happened in the last span: in the window every
// process shares when there is one and it answers, else in this
// process's.
func (s *Service) takeWindow(ctx context.Context, owner string, span time.Duration, limit int) bool {
	if s.cfg.SharedLimits != nil {
		// The single user's key ends in "": no user id is empty.
		ok, _, err := s.cfg.SharedLimits.Take(ctx, "upload-window|"+owner, limit, span)
		if err == nil {
			return ok
		}
	}
	return s.window.take(owner, s.now(), span, limit)
}

// policy returns the owner's daily limit (0 = unlimited) after checking
// the block flag and, when early, today's count.
func (s *Service) policy(ctx context.Context, owner string, early bool) (int, error) {
	p, err := s.cfg.Files.UploadPolicy(ctx, owner)
	if err != nil {
		return 0, err
	}
	if p.Blocked {
		return 0, docflow.Errorf(docflow.EFORBIDDEN, "Your account is blocked from uploading files")
	}
	limit := docflow.DefaultDailyUploadLimit.Get(s.cfg.Settings)
	if p.DailyLimit != nil {
		limit = *p.DailyLimit
	}
	if limit < 0 {
		limit = 0
	}
	if early && limit > 0 && p.UsedToday >= limit {
		e := docflow.Errorf(docflow.ERATELIMIT, "Daily upload limit of %d reached", limit)
		u := s.now().UTC()
		e.RetryAfter = int(time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC).Sub(u).Seconds()) + 1
		return 0, e
	}
	return limit, nil
}

// maxUpload is MAX_UPLOAD_SIZE (default 1 GiB).
func (s *Service) maxUpload() int64 {
	n := docflow.MaxUploadSize.Get(s.cfg.Settings)
	if n <= 0 {
		return 1 << 30
	}
	return n
}

// CheckDeclaredSize refuses a declared length over MAX_UPLOAD_SIZE, so a
// transport can answer 413 before reading anything.
func (s *Service) CheckDeclaredSize(size int64) error {
	if max := s.maxUpload(); size > max {
		return tooLarge(size, max)
	}
	return nil
}

func tooLarge(size, max int64) error {
	if size > 0 {
		return docflow.Errorf(docflow.ETOOLARGE, "File of %d bytes exceeds the maximum upload size of %d bytes", size, max)
	}
	return docflow.Errorf(docflow.ETOOLARGE, "File exceeds the maximum upload size of %d bytes", max)
}

// ingestOptions are channel details that are not part of docflow.Upload.
type ingestOptions struct {
	// delay holds the run's message back (processall throttling).
	delay time.Duration
	// seen is the watch-folder file taken in, recorded with the file.
	seen *docflow.WatchSeen
	// mail is the mail attachment taken in, recorded with the file.
	mail *docflow.MailSeen
}

// Ingest stores and records u.
func (s *Service) Ingest(ctx context.Context, u docflow.Upload) (*docflow.IntakeResult, error) {
	return s.ingest(ctx, u, ingestOptions{})
}

// IngestMail stores and records u, one attachment of a mail of an IMAP
// source, and remembers seen with it in the same transaction. ECONFLICT
// when the attachment was taken in before (by this or another process):
// then nothing is recorded. Other errors are Ingest's.
func (s *Service) IngestMail(ctx context.Context, u docflow.Upload, seen docflow.MailSeen) (*docflow.IntakeResult, error) {
	u.Channel = docflow.ChannelEmail
	return s.ingest(ctx, u, ingestOptions{mail: &seen})
}

func (s *Service) ingest(ctx context.Context, u docflow.Upload, opts ingestOptions) (res *docflow.IntakeResult, err error) {
	if s.cfg.Recorder != nil {
		start := s.now()
		defer func() { s.recordIntake(u, start, res, err) }()
	}
	return s.ingestFile(ctx, u, opts)
}

func (s *Service) ingestFile(ctx context.Context, u docflow.Upload, opts ingestOptions) (*docflow.IntakeResult, error) {
	if u.Body == nil {
		return nil, errors.New("ingest: nil body")
	}
	if u.Channel == "" {
		u.Channel = docflow.ChannelUpload
	}
	name := SanitizeFilename(u.Filename)
	ext := Extension(name)
	if _, ok := docflow.SupportedFileTypes()[ext]; !ok {
		return nil, unsupported()
	}
	max := s.maxUpload()
	if u.Size > max {
		return nil, tooLarge(u.Size, max)
	}
	owner := ownerOf(u.User)
	dailyLimit := 0
	if owner != nil {
		var err error
		if dailyLimit, err = s.policy(ctx, *owner, false); err != nil {
			return nil, err
		}
	}

	head := make([]byte, sniffLen)
	n, err := io.ReadFull(u.Body, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		err = nil
	case err != nil:
		return nil, s.readError(ctx, err)
	}
	head = head[:n]
	if n == 0 {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "File is empty")
	}
	mimeType, err := checkType(ext, head)
	if err != nil {
		return nil, err
	}

	// The file's id is drawn while the upload is stored: the round trip to
	// the database overlaps the blob store's flushes.
	ids := make(chan drawnID, 1)
	go func() {
		id, err := s.cfg.Files.NewFileID(ctx)
		ids <- drawnID{id, err}
	}()
	info, err := s.cfg.Blobs.Put(ctx, io.MultiReader(bytes.NewReader(head), u.Body), max)
	if err != nil {
		if docflow.ErrorCode(err) == docflow.ETOOLARGE {
			return nil, tooLarge(0, max)
		}
		return nil, s.readError(ctx, err)
	}
	if u.Size >= 0 && info.Size != u.Size {
		s.dropBlob(info)
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Upload incomplete: received %d of %d bytes", info.Size, u.Size)
	}

	f := &docflow.File{
		FileHash:         info.Key,
		OriginalFilename: name,
		StoredFilename:   uuid.NewString() + "." + ext,
		FileSize:         info.Size,
		MimeType:         mimeType,
		OwnerID:          owner,
		PipelineID:       u.PipelineID,
		Source:           u.Channel,
		OriginalBlob:     info.Key,
		AIMetadata:       map[string]any{},
	}
	for k, v := range u.Metadata {
		f.AIMetadata[k] = v
	}
	drawn := <-ids
	if drawn.err != nil {
		// Once more, in case the database only blinked.
		if drawn.id, drawn.err = s.cfg.Files.NewFileID(ctx); drawn.err != nil {
			s.dropBlob(info)
			return nil, drawn.err
		}
	}
	// The run and its messages are decided here; storage writes them with
	// the file unless it records a duplicate.
	runID := uuid.NewString()
	named := *f
	named.ID = drawn.id
	msgs, err := s.ingestedMessages(&named, runID, nil, opts.delay, true)
	if err != nil {
		s.dropBlob(info)
		return nil, err
	}
	dedup := docflow.EnableDeduplication.Get(s.cfg.Settings)
	rec := docflow.IngestRecord{
		ID:                  drawn.id,
		File:                f,
		Dedup:               dedup,
		SkipDuplicateRecord: u.SkipDuplicateRecord,
		DailyLimit:          dailyLimit,
		RunID:               runID,
		Messages:            msgs,
		Seen:                opts.seen,
		Mail:                opts.mail,
	}
	if u.Idempotency != nil {
		claim := *u.Idempotency
		claim.RequestHash = claim.HashFor(info.Key)
		rec.Idempotency = &claim
	}
	dupOf, err := s.cfg.Files.Ingest(ctx, rec)
	if err != nil {
		s.dropBlob(info)
		if ctx.Err() != nil {
			return nil, s.readError(ctx, err)
		}
		return nil, err
	}
	res := &docflow.IntakeResult{File: f, TaskID: f.TaskID, DuplicateOf: dupOf}
	if f.Status == docflow.StatusDuplicate && f.ID == 0 {
		// Not recorded (ui-upload): the blob is the original's.
		s.dropBlob(info)
	}
	if !dedup {
		// Without deduplication the link to an earlier copy is kept in the
		// record only; the upload is a normal new file.
		res.DuplicateOf = nil
	}
	return res, nil
}

// recordIntake records the outcome of one offered document: accepted,
// duplicate, rejected (the input was refused) or failed (the server failed).
func (s *Service) recordIntake(u docflow.Upload, start time.Time, res *docflow.IntakeResult, err error) {
	m := docflow.Metric{Kind: docflow.MetricIntake, Time: start, Channel: u.Channel, Duration: s.now().Sub(start), Bytes: max(u.Size, 0)}
	if m.Channel == "" {
		m.Channel = docflow.ChannelUpload
	}
	if u.User != nil {
		m.OwnerID = u.User.ID
	}
	m.Type = Extension(SanitizeFilename(u.Filename))
	switch {
	case err == nil && res != nil && res.File != nil:
		m.Status, m.FileID, m.Bytes, m.Type = docflow.IntakeAccepted, res.File.ID, res.File.FileSize, res.File.MimeType
		if res.DuplicateOf != nil || res.File.Status == docflow.StatusDuplicate {
			m.Status = docflow.IntakeDuplicate
		}
	case err == nil:
		m.Status = docflow.IntakeAccepted
	default:
		m.Status, m.ErrorClass = docflow.IntakeFailed, docflow.ErrorCode(err)
		switch m.ErrorClass {
		case docflow.EINVALID, docflow.EBADREQUEST, docflow.ETOOLARGE, docflow.EUNSUPPORTED, docflow.ERATELIMIT,
			docflow.EFORBIDDEN, docflow.ETIMEOUT, docflow.ENOTFOUND:
			m.Status = docflow.IntakeRejected
		}
	}
	s.cfg.Recorder.Record(m)
}

// readError turns a failed read of the body into the client-facing error:
// a timeout when the request's time ran out, else an incomplete upload.
func (s *Service) readError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return docflow.Errorf(docflow.ETIMEOUT, "Upload timed out")
	}
	if docflow.ErrorCode(err) != docflow.EINTERNAL {
		return err
	}
	s.log.Debug().Err(err).Msg("upload body read failed")
	return docflow.Errorf(docflow.EBADREQUEST, "Upload incomplete: the request body ended early")
}

// dropBlob removes a blob this upload created when no record uses it.
// NOTE: a concurrent identical upload may commit a record for the same key
// between the check and the delete; the window is a few milliseconds and
// the pipeline reports a missing original as a failed step, so a rare
// retry of that upload is the worst case.
func (s *Service) dropBlob(info docflow.BlobInfo) {
	if !info.Created {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	used, err := s.cfg.Files.BlobInUse(ctx, info.Key)
	if err != nil || used {
		return
	}
	if err := s.cfg.Blobs.Delete(ctx, info.Key); err != nil {
		s.log.Warn().Err(err).Str("blob", info.Key).Msg("remove abandoned blob")
	}
}

// ingestedMessages builds file.ingested (and, for a new upload,
// document.uploaded) for f's run.
func (s *Service) ingestedMessages(f *docflow.File, runID string, options map[string]any, delay time.Duration, uploaded bool) ([]docflow.OutboxMessage, error) {
	now := s.now()
	m, err := streams.FileIngestedMessage(streams.FileIngested{
		FileID: f.ID, RunID: runID, OwnerID: f.OwnerID, PipelineID: f.PipelineID, Options: options,
	}, now)
	if err != nil {
		return nil, err
	}
	if delay > 0 {
		m.AvailableAt = now.Add(delay)
	}
	msgs := []docflow.OutboxMessage{m}
	if uploaded {
		ev, err := streams.DocumentUploaded(f, now)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, ev)
	}
	return msgs, nil
}

// Reprocess queues each file again with a new run.
func (s *Service) Reprocess(ctx context.Context, ids []int64, opts docflow.ReprocessOptions) ([]docflow.ReprocessResult, map[int64]error, error) {
	files, err := s.cfg.Files.FindFilesByIDs(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	errs := map[int64]error{}
	found := make(map[int64]*docflow.File, len(files))
	for _, f := range files {
		found[f.ID] = f
	}
	var items []docflow.Requeue
	options := map[string]any{}
	if opts.ForceCloudOCR {
		options["force_cloud_ocr"] = true
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		f, ok := found[id]
		if !ok {
			errs[id] = docflow.Errorf(docflow.ENOTFOUND, "File not found")
			continue
		}
		has, err := s.cfg.Blobs.Exists(ctx, f.OriginalBlob)
		if err != nil {
			return nil, nil, err
		}
		if !has && opts.ForceCloudOCR && f.ProcessedBlob != "" {
			if has, err = s.cfg.Blobs.Exists(ctx, f.ProcessedBlob); err != nil {
				return nil, nil, err
			}
		}
		if !has {
			if opts.ForceCloudOCR {
				errs[id] = docflow.Errorf(docflow.EBADREQUEST, "Neither the original nor a local file was found")
			} else {
				errs[id] = docflow.Errorf(docflow.EBADREQUEST, "Local file not found")
			}
			continue
		}
		// The messages name the owner and pipeline read above: requeueing
		// changes neither.
		runID := uuid.NewString()
		msgs, err := s.ingestedMessages(f, runID, options, 0, false)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, docflow.Requeue{FileID: id, RunID: runID, Options: options, Messages: msgs})
	}
	var out []docflow.ReprocessResult
	if len(items) > 0 {
		runOf := map[int64]string{}
		for _, it := range items {
			runOf[it.FileID] = it.RunID
		}
		done, missing, err := s.cfg.Files.RequeueFiles(ctx, items)
		if err != nil {
			return nil, nil, err
		}
		for _, id := range missing {
			errs[id] = docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		for _, f := range done {
			out = append(out, docflow.ReprocessResult{File: f, TaskID: runOf[f.ID]})
		}
	}
	return out, errs, nil
}

// processallDir is PROCESSALL_DIR, else WORKDIR/processall.
// ProcessallDir is the folder processall reads (PROCESSALL_DIR, else
// WORKDIR/processall).
func (s *Service) ProcessallDir() string { return s.processallDir() }

func (s *Service) processallDir() string {
	if d := docflow.ProcessallDir.Get(s.cfg.Settings); d != "" {
		return d
	}
	wd := s.cfg.WorkDir
	if wd == "" {
		wd = docflow.Workdir.Get(s.cfg.Settings)
	}
	return filepath.Join(wd, "processall")
}

// drawnID is a file id drawn ahead of Ingest.
type drawnID struct {
	id  int64
	err error
}
