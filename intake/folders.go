package intake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"docflow"
)

// Subfolders a folder intake moves files to once it is done with them.
const (
	ProcessedDir = "processed"
	RejectedDir  = "rejected"
)

// ProcessAll ingests every PDF of the processall folder and moves each
// ingested file to its processed/ subfolder, so a second call does not take
// it in again. Above PROCESSALL_THROTTLE_THRESHOLD files, run i is held back
// i × PROCESSALL_THROTTLE_DELAY seconds.
func (s *Service) ProcessAll(ctx context.Context, user *docflow.User) (*docflow.ProcessAllResult, error) {
	dir := s.processallDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &docflow.ProcessAllResult{PDFFiles: []string{}, TaskIDs: []string{}}, nil
	} else if err != nil {
		return nil, fmt.Errorf("processall: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.EqualFold(filepath.Ext(e.Name()), ".pdf") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	threshold := docflow.ProcessallThrottleThreshold.Get(s.cfg.Settings)
	delay := docflow.ProcessallThrottleDelay.Get(s.cfg.Settings)
	res := &docflow.ProcessAllResult{PDFFiles: []string{}, TaskIDs: []string{}, Throttled: len(names) > threshold}
	for i, name := range names {
		var opts ingestOptions
		if res.Throttled {
			opts.delay = time.Duration(i) * delay
		}
		r, err := s.ingestPath(ctx, filepath.Join(dir, name), user, docflow.ChannelProcessAll, opts)
		if err != nil {
			if docflow.ErrorCode(err) == docflow.EINTERNAL {
				return nil, err
			}
			s.log.Warn().Err(err).Str("file", name).Msg("processall: file refused")
			continue
		}
		res.PDFFiles = append(res.PDFFiles, name)
		if r.TaskID != "" {
			res.TaskIDs = append(res.TaskIDs, r.TaskID)
		}
		if err := moveInto(dir, ProcessedDir, name); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (s *Service) ingestPath(ctx context.Context, p string, user *docflow.User, channel string, opts ingestOptions) (*docflow.IntakeResult, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", p, err)
	}
	return s.ingest(ctx, docflow.Upload{Filename: filepath.Base(p), Body: f, Size: st.Size(), User: user, Channel: channel}, opts)
}

// moveInto moves dir/name into dir/sub/, adding a counter when the name is
// taken.
func moveInto(dir, sub, name string) error {
	target := filepath.Join(dir, sub)
	if err := os.MkdirAll(target, 0o750); err != nil {
		return fmt.Errorf("move %s: %w", name, err)
	}
	dst := filepath.Join(target, name)
	ext := filepath.Ext(name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(target, strings.TrimSuffix(name, ext)+"-"+strconv.Itoa(i)+ext)
	}
	if err := os.Rename(filepath.Join(dir, name), dst); err != nil {
		return fmt.Errorf("move %s: %w", name, err)
	}
	return nil
}

// fileState is what a poll saw of a file: it is stable once two polls in
// a row see the same size and modification time.
type fileState struct {
	size  int64
	mtime time.Time
}

// Watcher polls the WATCH_FOLDERS. Each new file whose size and
// modification time stayed the same across two polls is ingested once and
// moved to processed/ (or rejected/ when refused). watch_folder_seen
// remembers every file taken in, written in the intake transaction, so a
// restart at any point never ingests a file twice.
type Watcher struct {
	svc *Service

	mu     sync.Mutex
	states map[string]fileState // path -> last poll's view

	cancel context.CancelFunc
	done   chan struct{}
}

// NewWatcher returns a stopped watcher.
func (s *Service) NewWatcher() *Watcher {
	return &Watcher{svc: s, states: map[string]fileState{}}
}

// Start polls every WATCH_FOLDER_INTERVAL seconds until Stop.
func (w *Watcher) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.loop(ctx, w.done)
}

// Stop ends the polling and waits for a poll in progress to finish.
func (w *Watcher) Stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel, w.done = nil, nil
	w.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (w *Watcher) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		if err := w.Poll(ctx); err != nil && ctx.Err() == nil {
			w.svc.log.Warn().Err(err).Msg("watch folders: poll failed")
		}
		t := time.NewTimer(docflow.Positive(docflow.WatchFolderInterval, w.svc.cfg.Settings))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Poll scans every watch folder once.
func (w *Watcher) Poll(ctx context.Context) error {
	var errs []error
	for _, dir := range docflow.WatchFolders.Get(w.svc.cfg.Settings) {
		if err := w.pollFolder(ctx, dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// skipName ignores hidden files and names of downloads still in progress.
func skipName(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "~") ||
		strings.HasSuffix(lower, ".tmp") || strings.HasSuffix(lower, ".part") ||
		strings.HasSuffix(lower, ".crdownload") || strings.HasSuffix(lower, ".partial")
}

func (w *Watcher) pollFolder(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("watch folder %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("watch folder %s: %w", abs, err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !e.Type().IsRegular() || skipName(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(abs, e.Name())
		present[p] = true
		now := fileState{size: info.Size(), mtime: info.ModTime().Truncate(time.Microsecond)}
		w.mu.Lock()
		prev, seen := w.states[p]
		w.states[p] = now
		w.mu.Unlock()
		if !seen || prev != now {
			continue // new or still changing: look again next poll
		}
		if err := w.takeIn(ctx, abs, e.Name(), now); err != nil {
			return err
		}
		w.mu.Lock()
		delete(w.states, p)
		w.mu.Unlock()
	}
	w.mu.Lock()
	for p := range w.states {
		if filepath.Dir(p) == abs && !present[p] {
			delete(w.states, p)
		}
	}
	w.mu.Unlock()
	return nil
}

// takeIn ingests one stable file unless an earlier run already did, then
// moves it out of the folder.
func (w *Watcher) takeIn(ctx context.Context, dir, name string, st fileState) error {
	seen := docflow.WatchSeen{Folder: dir, Name: name, Size: st.size, MTime: st.mtime}
	files := w.svc.cfg.Files
	done, err := files.WatchSeenExists(ctx, seen)
	if err != nil {
		return err
	}
	if done {
		// Ingested before a restart that came before the move.
		return moveInto(dir, ProcessedDir, name)
	}
	_, err = w.svc.ingestPath(ctx, filepath.Join(dir, name), nil, docflow.ChannelWatchFolder, ingestOptions{seen: &seen})
	switch code := docflow.ErrorCode(err); {
	case err == nil:
		return moveInto(dir, ProcessedDir, name)
	case code == docflow.EBADREQUEST || code == docflow.ETOOLARGE:
		w.svc.log.Warn().Err(err).Str("folder", dir).Str("file", name).Msg("watch folder: file refused")
		if err := files.RecordWatchSeen(ctx, seen); err != nil {
			return err
		}
		return moveInto(dir, RejectedDir, name)
	default:
		return fmt.Errorf("watch folder %s: ingest %s: %w", dir, name, err)
	}
}
