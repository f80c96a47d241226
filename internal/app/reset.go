package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors/destinations"
	"docflow/actors/indexer"
	"docflow/intake"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
)

// systemReset is the system reset of this process: the API's resets and
// FACTORY_RESET_ON_STARTUP's (docflow.SystemResetter), and what the
// process does when any process announces one on the control topic: drop
// everything it cached of the wiped tables and files.
//
// A reset, under the reset lock: (reimport) the originals are linked into
// a hidden staging folder inside the reimport folder; the content tables
// are emptied in one transaction that also writes the settings (reimport:
// WATCH_FOLDERS gains the reimport folder) and the announcement; this
// process drops its caches; the blobs no record references any more are
// removed, with what processall left in its processed/ and rejected/
// folders; (reimport) the staged originals move into the reimport folder,
// where the watch folders of the serve or worker processes take them in.
//
// In flight at the time of the wipe: step results, claims and delivery
// outcomes are written only while their rows exist (the run store and the
// destinations store check), so a step finishing after the wipe writes
// nothing; sequences are not reset, so a message still queued names ids no
// new row will have; each removed destination's actor is told its
// integration is gone; the search indexer reads every file it indexes
// from PostgreSQL, so an event of a wiped file removes it from the index.
type systemReset struct {
	m     *App
	store *postgres.ResetStore
	log   zerolog.Logger

	mu sync.Mutex
	// claimed is the last reset this process took up (its own, or one
	// heard); seen the last one whose caches it has dropped.
	claimed, seen string
}

var _ docflow.SystemResetter = (*systemReset)(nil)

func (m *App) newSystemReset() *systemReset {
	return &systemReset{m: m, store: postgres.NewResetStore(m.DB, destinations.ChangedMessage),
		log: m.Log.With().Str("component", "system-reset").Logger()}
}

// LastReset is the id of the last system reset whose caches this process
// dropped ("" for none).
func (m *App) LastReset() string {
	if m.reset == nil {
		return ""
	}
	m.reset.mu.Lock()
	defer m.reset.mu.Unlock()
	return m.reset.seen
}

// Reset implements docflow.SystemResetter.
func (r *systemReset) Reset(ctx context.Context, mode, actor string) (*docflow.ResetResult, error) {
	if !docflow.EnableFactoryReset.Get(r.m.Settings) {
		return nil, docflow.Errorf(docflow.EFORBIDDEN, "System reset is disabled: set ENABLE_FACTORY_RESET=true to allow it")
	}
	if _, ok := docflow.ResetConfirmation[mode]; !ok {
		return nil, docflow.Errorf(docflow.EINVALID, "Unknown reset mode %q (full or reimport)", mode)
	}
	unlock, ok, err := r.store.TryLockReset(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, docflow.Errorf(docflow.ECONFLICT, "A system reset is already running; wait for it to finish")
	}
	defer unlock()
	return r.locked(ctx, mode, actor, nil)
}

// locked runs a reset under the reset lock; settings are written with the
// wipe.
func (r *systemReset) locked(ctx context.Context, mode, actor string, settings map[string]string) (*docflow.ResetResult, error) {
	start := time.Now()
	res := &docflow.ResetResult{ID: uuid.NewString()}
	r.log.Warn().Str("reset_id", res.ID).Str("mode", mode).Str("actor", actor).
		Msg("SYSTEM RESET: wiping every document, user, token and record of docflow (the schema, settings and local administrators stay)")
	settings = maps.Clone(settings)
	if settings == nil {
		settings = map[string]string{}
	}
	var stage, folder string
	if mode == docflow.ResetReimport {
		wd, err := filepath.Abs(r.m.Workdir)
		if err != nil {
			return nil, err
		}
		folder = filepath.Join(wd, "reimport")
		// NOTE: hidden, so a watch folder already on the reimport folder
		// (an earlier reimport) takes nothing in before the wipe.
		stage = filepath.Join(folder, ".incoming-"+res.ID)
		originals, err := r.store.Originals(ctx)
		if err != nil {
			return nil, err
		}
		if err := r.stageOriginals(ctx, stage, originals); err != nil {
			os.RemoveAll(stage) //nolint:errcheck // nothing was wiped
			return nil, err
		}
		watch := docflow.WatchFolders.Get(r.m.Settings)
		if !slices.Contains(watch, folder) {
			watch = append(watch, folder)
		}
		settings[docflow.WatchFolders.Key()] = strings.Join(watch, ",")
	}
	announce, err := streams.ControlMessage(streams.Control{Kind: streams.ControlReset, ResetID: res.ID, Mode: mode}, time.Now())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.claimed = res.ID // its announcement, heard back, is not acted on twice
	r.mu.Unlock()
	res.Database, err = r.store.Wipe(ctx, docflow.ResetWipe{Settings: settings, Messages: []docflow.OutboxMessage{announce}})
	if err != nil {
		if stage != "" {
			os.RemoveAll(stage) //nolint:errcheck // nothing was wiped
		}
		return nil, err
	}
	r.dropCaches(ctx)
	r.dropped(res.ID)
	res.Filesystem = r.wipeFiles(ctx, start)
	if mode == docflow.ResetReimport {
		moved, err := releaseStaged(stage, folder)
		res.Reimport = &docflow.ResetReimportResult{FilesMoved: moved, ReimportFolder: folder}
		if err != nil {
			r.log.Error().Err(err).Str("folder", folder).Msg("system reset: originals left in " + stage + "; move them into the reimport folder by hand")
		}
	}
	var rows int64
	for _, n := range res.Database {
		rows += n
	}
	ev := r.log.Warn().Str("reset_id", res.ID).Str("mode", mode).Str("actor", actor).Int64("rows", rows).
		Int("tables", len(res.Database)).Int("files_removed", res.Filesystem.DeletedFiles).Dur("took", time.Since(start))
	if res.Reimport != nil {
		ev = ev.Int("originals_moved", res.Reimport.FilesMoved).Str("reimport_folder", folder)
	}
	ev.Msg("SYSTEM RESET done")
	return res, nil
}

// heard is the control listener's handler: a reset announced by any
// process (this one's own is dropped already).
func (r *systemReset) heard(c streams.Control) {
	if c.Kind != streams.ControlReset {
		return
	}
	r.mu.Lock()
	if r.claimed == c.ResetID {
		r.mu.Unlock()
		return
	}
	r.claimed = c.ResetID
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r.dropCaches(ctx)
	r.dropped(c.ResetID)
	r.log.Warn().Str("reset_id", c.ResetID).Str("mode", c.Mode).Msg("system reset announced: this process dropped its caches")
}

// dropped records that the caches are dropped for reset id.
func (r *systemReset) dropped(id string) {
	r.mu.Lock()
	r.seen = id
	r.mu.Unlock()
}

// dropCaches forgets what this process cached of the wiped tables: the
// settings (a reimport wrote WATCH_FOLDERS), users' states, API tokens,
// listing totals and counts, the router's pipelines and rules, the
// delivery targets, and empties the search index it holds.
func (r *systemReset) dropCaches(ctx context.Context) {
	m := r.m
	if err := m.Settings.Reload(ctx); err != nil {
		r.log.Warn().Err(err).Msg("system reset: settings not reloaded (the periodic refresh will)")
	}
	if m.users != nil {
		m.users.forgetAll()
	}
	if m.HTTP != nil {
		m.HTTP.DropCaches()
	}
	if m.Files != nil {
		m.Files.DropCaches()
	}
	if m.SearchStore != nil {
		m.SearchStore.DropCaches()
	}
	if m.Engine != nil {
		m.Engine.DropCaches()
	}
	if m.Delivery != nil {
		m.Delivery.DropCaches()
	}
	if m.Index != nil && m.SearchStore != nil {
		// The wiped ids are all below the file sequence, which the
		// reindex walks: each one not in PostgreSQL is removed.
		st, err := indexer.Reindex(ctx, m.SearchStore, m.Index, indexer.ReindexOptions{Settings: m.Settings, Log: r.log})
		if err != nil {
			r.log.Error().Err(err).Msg("system reset: search index not emptied; run `docflow reindex`")
		} else {
			r.log.Info().Int("removed", st.Removed).Msg("system reset: search index emptied")
		}
	}
}

// wipeFiles removes the work files of the wiped records: every blob
// stored before the reset began that no record references now, and the
// processed/ and rejected/ folders processall keeps. Failures are logged:
// the database is wiped already, and the blob sweep removes what is left.
func (r *systemReset) wipeFiles(ctx context.Context, start time.Time) docflow.ResetFilesystem {
	var out docflow.ResetFilesystem
	if r.m.Blobs != nil && r.m.Files != nil {
		st, err := r.m.Blobs.Sweep(ctx, blob.SweepOptions{MinAge: max(time.Since(start), time.Millisecond), InUse: r.m.Files.BlobsInUse,
			OnError: func(key string, err error) {
				r.log.Warn().Err(err).Str("blob", key).Msg("system reset: blob not removed")
			}})
		out.DeletedFiles += st.Removed
		if err != nil {
			r.log.Error().Err(err).Msg("system reset: blob store not swept to the end; the blob sweep removes the rest")
		}
	}
	if r.m.Intake != nil {
		dir := r.m.Intake.ProcessallDir()
		for _, sub := range []string{intake.ProcessedDir, intake.RejectedDir} {
			p := filepath.Join(dir, sub)
			n, err := countFiles(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err == nil {
				err = os.RemoveAll(p)
			}
			if err != nil {
				r.log.Warn().Err(err).Str("folder", p).Msg("system reset: folder not removed")
				continue
			}
			out.DeletedDirs++
			out.DeletedFiles += n
		}
	}
	return out
}

func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	return n, err
}

// stageOriginals links (or copies) each original into dir under the name
// it was uploaded with, made unique. An original whose blob is gone is
// skipped.
func (r *systemReset) stageOriginals(ctx context.Context, dir string, originals []docflow.ResetOriginal) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("reimport folder: %w", err)
	}
	for _, o := range originals {
		src, err := r.m.Blobs.Path(ctx, o.Blob)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			r.log.Warn().Int64("file_id", o.FileID).Str("name", o.Name).Msg("system reset: original missing, not reimported")
			continue
		} else if err != nil {
			return err
		}
		dst := freeName(dir, docflow.CleanFilename(o.Name))
		if err := os.Link(src, dst); err != nil {
			// Another filesystem: copy.
			if err := copyFile(src, dst); err != nil {
				return fmt.Errorf("reimport %s: %w", o.Name, err)
			}
		}
	}
	return nil
}

// releaseStaged moves the staged originals into folder (the watch
// folder) and removes the staging folder.
func releaseStaged(stage, folder string) (int, error) {
	entries, err := os.ReadDir(stage)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if err := os.Rename(filepath.Join(stage, e.Name()), freeName(folder, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, os.Remove(stage)
}

// freeName is dir/name, or dir/name-1.ext, -2… when taken.
func freeName(dir, name string) string {
	p := filepath.Join(dir, name)
	ext := filepath.Ext(name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = filepath.Join(dir, strings.TrimSuffix(name, ext)+"-"+strconv.Itoa(i)+ext)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// resetOnStartup runs FACTORY_RESET_ON_STARTUP's full reset, once: the
// reset writes FACTORY_RESET_ON_STARTUP=false into the database, which
// the environment's value is read below, so the next start wipes nothing
// until an administrator sets it again. It needs ENABLE_FACTORY_RESET too.
// Several processes starting together: one resets, the others wait for
// it and then find the setting false.
func (m *App) resetOnStartup(ctx context.Context) error {
	if !docflow.FactoryResetOnStartup.Get(m.Settings) {
		return nil
	}
	log := m.reset.log
	if !docflow.EnableFactoryReset.Get(m.Settings) {
		log.Warn().Msg("FACTORY_RESET_ON_STARTUP is true but ENABLE_FACTORY_RESET is not: nothing is wiped (set both to wipe docflow at start)")
		return nil
	}
	for {
		unlock, ok, err := m.reset.store.TryLockReset(ctx)
		if err != nil {
			return err
		}
		if ok {
			defer unlock()
			break
		}
		log.Warn().Msg("FACTORY_RESET_ON_STARTUP: another process is resetting; waiting for it")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := m.Settings.Reload(ctx); err != nil {
		return err
	}
	if !docflow.FactoryResetOnStartup.Get(m.Settings) {
		log.Info().Msg("FACTORY_RESET_ON_STARTUP: another process has reset docflow already")
		return nil
	}
	log.Warn().Msg("FACTORY_RESET_ON_STARTUP=true and ENABLE_FACTORY_RESET=true: WIPING DOCFLOW NOW. The setting is then stored as false so that the next start keeps the data.")
	res, err := m.reset.locked(ctx, docflow.ResetFull, "system", map[string]string{docflow.FactoryResetOnStartup.Key(): "false"})
	if err != nil {
		return fmt.Errorf("FACTORY_RESET_ON_STARTUP: %w", err)
	}
	var rows int64
	for _, n := range res.Database {
		rows += n
	}
	if err := postgres.NewAuditLog(m.DB).RecordAudit(ctx, docflow.AuditEntry{Actor: "system", Action: "system.reset", Target: docflow.ResetFull,
		Detail: fmt.Sprintf("FACTORY_RESET_ON_STARTUP: reset %s, %d rows from %d tables, %d files removed", res.ID, rows, len(res.Database), res.Filesystem.DeletedFiles)}); err != nil {
		log.Error().Err(err).Msg("system reset not audited")
	}
	return nil
}

// listenControl hears the control topic: the resets other processes
// announce. It starts last, once every cache it drops is built.
func (m *App) listenControl(ctx context.Context) error {
	l, err := streams.ListenControl(ctx, m.Brokers, m.Log, m.reset.heard)
	if err != nil {
		return err
	}
	m.onClose("control listener", func(context.Context) error { l.Close(); return nil })
	return nil
}
