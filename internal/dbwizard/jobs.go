package dbwizard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"docflow"
	"docflow/storage/legacy"
	"docflow/storage/postgres"
)

// Start begins the migration from sourceURL to targetURL in the
// background and returns its job (running). Which migration it is
// follows from the source:
//
//   - docflow's own database (sourceURL empty, or naming it): a copy into
//     targetURL, a PostgreSQL database that must be empty or a copy this
//     wizard began; targetURL naming docflow's own database is refused;
//   - the original service's database (its SQLite file or PostgreSQL): an
//     import into docflow's own database (targetURL empty or naming it).
//
// Refusals are EINVALID with the reason, and nothing is written. A
// source or target that cannot be reached is EUNAVAILABLE with the
// reason. The same source and target again resume the job when it did
// not finish (its process stopped, or it failed), or return it while it
// runs; after it finished they start a new one that takes what was
// added since.
//
// An import given req.SourceFilesDir (the original's work folder on this
// machine) brings the files' contents after the records (contents.go);
// the folder is checked before anything is written. A copy takes no
// folder.
func (w *Wizard) Start(ctx context.Context, req docflow.MigrationRequest) (*docflow.MigrationJob, error) {
	sourceURL, targetURL := strings.TrimSpace(req.SourceURL), strings.TrimSpace(req.TargetURL)
	if sourceURL == "" {
		sourceURL = w.cfg.DB.URL
	}
	src, err := w.open(ctx, sourceURL)
	if err != nil {
		return nil, w.connectError("source", err)
	}
	kind, err := w.kindOf(ctx, src)
	if err != nil {
		src.Close()
		return nil, w.connectError("source", err)
	}
	switch kind {
	case docflow.MigrationCopy:
		if strings.TrimSpace(req.SourceFilesDir) != "" {
			src.Close()
			return nil, docflow.Errorf(docflow.EINVALID, "source_files_dir is for an import of the original service: a copy of docflow's database takes none")
		}
		return w.startCopy(ctx, src, sourceURL, targetURL)
	case docflow.MigrationImport:
		var folder *legacy.Folder
		if strings.TrimSpace(req.SourceFilesDir) != "" {
			folder, err = legacy.OpenFolder(req.SourceFilesDir, req.SourceWorkdir)
			if err != nil {
				src.Close()
				return nil, err
			}
		}
		return w.startImport(ctx, src, folder, sourceURL, targetURL)
	}
	// The import's own check says what the source lacks.
	_, err = postgres.PlanLegacyImport(ctx, src.legacy())
	src.Close()
	if err == nil {
		err = docflow.Errorf(docflow.EINVALID, "the source is neither docflow's database nor the original service's")
	}
	return nil, err
}

// connectError is err as the API answers it: a refusal as it is, a
// failure to connect as EUNAVAILABLE naming which side failed.
func (w *Wizard) connectError(side string, err error) error {
	if isRefusal(err) {
		return err
	}
	return docflow.Errorf(docflow.EUNAVAILABLE, "cannot reach the %s database: %s", side, Reason(err))
}

func (w *Wizard) startCopy(ctx context.Context, src *source, sourceURL, targetURL string) (*docflow.MigrationJob, error) {
	src.Close() // the copy reads docflow's own database through its pool
	if targetURL == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "target_url is required to copy docflow's database")
	}
	backend, _, err := docflow.ParseDatabaseURL(targetURL)
	if err != nil {
		return nil, err
	}
	if backend != docflow.BackendPostgres {
		return nil, docflow.Errorf(docflow.EINVALID, "docflow's database can only be copied into PostgreSQL")
	}
	tgt, err := w.open(ctx, targetURL)
	if err != nil {
		return nil, w.connectError("target", err)
	}
	same, err := w.cfg.DB.SameDatabase(ctx, tgt.pg)
	if err != nil {
		tgt.Close()
		return nil, w.connectError("target", err)
	}
	if same {
		tgt.Close()
		return nil, docflow.Errorf(docflow.EINVALID, "refused: the target is the database docflow runs on; copy into another database")
	}
	if _, err := postgres.CheckCopyTarget(ctx, tgt.pg); err != nil {
		tgt.Close()
		return nil, w.connectError("target", err)
	}
	job, taken, err := w.claim(ctx, docflow.MigrationCopy, sourceURL, targetURL)
	if err != nil || !taken {
		tgt.Close()
		return job, err
	}
	out := clone(job)
	w.run(job, func(ctx context.Context, save func() error) error {
		defer tgt.Close()
		if err := postgres.PrepareCopyTarget(ctx, tgt.pg); err != nil {
			return err
		}
		return w.cfg.DB.CopyTo(ctx, tgt.pg, job, w.cfg.Batch, save)
	})
	return out, nil
}

func (w *Wizard) startImport(ctx context.Context, src *source, folder *legacy.Folder, sourceURL, targetURL string) (*docflow.MigrationJob, error) {
	closeAll := func() {
		src.Close()
		if folder != nil {
			folder.Close()
		}
	}
	if targetURL != "" && targetURL != w.cfg.DB.URL {
		// Only docflow's own database takes an import: a target naming it
		// another way is checked by identity.
		backend, _, err := docflow.ParseDatabaseURL(targetURL)
		if err != nil || backend != docflow.BackendPostgres {
			closeAll()
			return nil, docflow.Errorf(docflow.EINVALID, "the original service's database is imported into docflow's own database: leave target_url empty")
		}
		tgt, err := w.open(ctx, targetURL)
		if err != nil {
			closeAll()
			return nil, w.connectError("target", err)
		}
		same, err := w.cfg.DB.SameDatabase(ctx, tgt.pg)
		tgt.Close()
		if err != nil || !same {
			closeAll()
			return nil, docflow.Errorf(docflow.EINVALID, "the original service's database is imported into docflow's own database: leave target_url empty")
		}
	}
	plan, err := postgres.PlanLegacyImport(ctx, src.legacy())
	if err != nil {
		closeAll()
		return nil, err
	}
	job, taken, err := w.claim(ctx, docflow.MigrationImport, sourceURL, "docflow")
	if err != nil || !taken {
		closeAll()
		return job, err
	}
	key := fingerprint("source", sourceURL)
	out := clone(job)
	w.run(job, func(ctx context.Context, save func() error) error {
		defer closeAll()
		if err := w.cfg.DB.ImportLegacy(ctx, src.legacy(), plan, key, job, w.cfg.Batch, save); err != nil {
			return err
		}
		return w.importContents(ctx, src.legacy(), folder, key, job, save)
	})
	return out, nil
}

// fingerprint hashes the parts (URLs with their passwords) into the key
// that finds a job again without keeping a password.
func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (w *Wizard) claim(ctx context.Context, kind, sourceURL, targetURL string) (*docflow.MigrationJob, bool, error) {
	return w.cfg.Jobs.Claim(ctx, kind, fingerprint(kind, sourceURL, targetURL),
		docflow.RedactDatabaseURL(sourceURL), docflow.RedactDatabaseURL(targetURL), w.cfg.Owner, w.cfg.Lease)
}

// run runs work in the background: job's progress is saved after each
// batch and on a heartbeat, under one lock (job is shared with the
// heartbeat); at the end the job is completed, or failed with the reason.
// A job stopped by Close stays resumable: failed, "interrupted".
func (w *Wizard) run(job *docflow.MigrationJob, work func(ctx context.Context, save func() error) error) {
	var mu sync.Mutex
	snapshot := clone(job)
	saveLocked := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return w.cfg.Jobs.Save(ctx, job, w.cfg.Owner)
	}
	save := func() error {
		mu.Lock()
		err := saveLocked()
		snapshot = clone(job)
		mu.Unlock()
		if err == nil && w.cfg.AfterBatch != nil {
			err = w.cfg.AfterBatch(snapshot)
		}
		return err
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer cancel()
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(w.cfg.Heartbeat)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					mu.Lock()
					if err := saveLocked(); err != nil && docflow.ErrorCode(err) == docflow.ECONFLICT {
						cancel() // another process took the job up
					}
					mu.Unlock()
				}
			}
		}()
		err := work(ctx, save)
		close(done)
		mu.Lock()
		defer mu.Unlock()
		job.Errors = nil
		switch {
		case err == nil:
			job.Status = docflow.MigrationCompleted
		case w.ctx.Err() != nil:
			job.Status = docflow.MigrationFailed
			job.Errors = []string{"interrupted: docflow stopped; start the migration again to resume it"}
		default:
			job.Status = docflow.MigrationFailed
			job.Errors = []string{Reason(err)}
		}
		if err := saveLocked(); err != nil {
			w.cfg.Log.Error().Err(err).Int64("job", job.ID).Msg("database migration: saving the outcome")
		}
		ev := w.cfg.Log.Info()
		if job.Status == docflow.MigrationFailed {
			ev = w.cfg.Log.Warn().Strs("errors", job.Errors)
		}
		ev.Int64("job", job.ID).Str("kind", job.Kind).Str("status", job.Status).Int64("rows", job.RowsCopied).Msg("database migration ended")
	}()
}

// Job returns a job by id (ENOTFOUND).
func (w *Wizard) Job(ctx context.Context, id int64) (*docflow.MigrationJob, error) {
	return w.cfg.Jobs.Job(ctx, id)
}

// Jobs returns the latest jobs, newest first.
func (w *Wizard) Jobs(ctx context.Context) ([]*docflow.MigrationJob, error) {
	return w.cfg.Jobs.Jobs(ctx, 50)
}

// clone is a copy of job that shares nothing with it (the running job
// changes its own).
func clone(job *docflow.MigrationJob) *docflow.MigrationJob {
	c := *job
	c.Tables = append([]docflow.MigrationTable(nil), job.Tables...)
	c.Errors = append([]string(nil), job.Errors...)
	c.Unmapped = append([]docflow.Unmapped(nil), job.Unmapped...)
	return &c
}
