package dbwizard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"docflow"
	"docflow/storage/legacy"
	"docflow/storage/postgres"
)

// The contents pass of an import: after the records, each imported file's
// original and processed versions are streamed from the original's work
// folder into the blob store (content-addressed, as intake stores an
// upload), the original checked against the hash the original recorded,
// and the file's record pointed at the blobs. A file whose content is
// missing, unreadable, outside the folder or not what its hash says is a
// line in the report, and is tried again by the next run; a version
// attached is never copied again, and an original whose content the
// store holds already is linked without reading it.

// sha256Hex is the shape of a SHA-256 in hex, the blob store's keys.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// noFolderReason is the report's line when the import was given no work
// folder: the records point at no content.
const noFolderReason = "not brought: no source_files_dir was given (import again with the original's work folder to bring them)"

// importContents runs the contents pass over the source's files table.
func (w *Wizard) importContents(ctx context.Context, src docflow.LegacySource, folder *legacy.Folder, key string,
	job *docflow.MigrationJob, save func() error) error {
	files, done, err := w.cfg.DB.LegacyContentProgress(ctx, key)
	if err != nil {
		return err
	}
	p := job.Table(postgres.LegacyContentsTable)
	p.RowCount, p.RowsCopied, p.Done = files, done, false
	if folder == nil {
		p.Done = true
		job.AddUnmapped(postgres.LegacyContentsTable, noFolderReason, files-done)
		return save()
	}
	if err := save(); err != nil {
		return err
	}
	have, err := src.Columns(ctx, "files")
	if err != nil {
		return err
	}
	cols := []string{"id", "local_filename"}
	for _, c := range have {
		if c == "original_file_path" || c == "processed_file_path" {
			cols = append(cols, c)
		}
	}
	batch := w.cfg.Batch
	if batch <= 0 {
		batch = 100
	}
	var after int64
	for {
		rows, err := src.Rows(ctx, "files", cols, after, batch)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			if id, ok := rowID(r); ok {
				ids = append(ids, id)
				after = max(after, id)
			}
		}
		states, err := w.cfg.DB.LegacyFileContents(ctx, key, ids)
		if err != nil {
			return err
		}
		worked := false
		for _, r := range rows {
			id, _ := rowID(r)
			st, ok := states[id]
			if !ok || st.Done {
				continue // not imported, or its content is in
			}
			worked = true
			original, processed, problems, err := w.bringContent(ctx, folder, r, st)
			if err != nil {
				return fmt.Errorf("the content of file %d: %w", id, err)
			}
			if err := w.cfg.DB.AttachLegacyContent(ctx, key, st, original, processed, strings.Join(problems, "; ")); err != nil {
				return err
			}
			if len(problems) == 0 {
				p.RowsCopied++
			}
		}
		if !worked {
			continue
		}
		if err := w.cfg.DB.LegacyReport(ctx, key, job); err != nil {
			return err
		}
		if err := save(); err != nil {
			return err
		}
	}
	p.Done = true
	if err := w.cfg.DB.LegacyReport(ctx, key, job); err != nil {
		return err
	}
	return save()
}

// rowID is a source row's integer id.
func rowID(r docflow.LegacyRow) (int64, bool) {
	switch v := r["id"].(type) {
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case int:
		return int64(v), true
	}
	return 0, false
}

func rowText(r docflow.LegacyRow, col string) string {
	switch v := r[col].(type) {
	case string:
		return strings.TrimSpace(v)
	case []byte:
		return strings.TrimSpace(string(v))
	}
	return ""
}

// bringContent brings the versions of one file that its record lacks:
// the blobs to attach ("" for none) and the problems met, each naming the
// version, the recorded path and the reason. An error is the blob
// store's or the context's: it stops the import.
func (w *Wizard) bringContent(ctx context.Context, folder *legacy.Folder, r docflow.LegacyRow, st postgres.LegacyFileContent) (original, processed string, problems []string, err error) {
	if st.OriginalBlob == "" {
		original, problems, err = w.bringOriginal(ctx, folder, r, st.FileHash)
		if err != nil {
			return "", "", nil, err
		}
	}
	if path := rowText(r, "processed_file_path"); path != "" && st.ProcessedBlob == "" {
		info, why, err := w.copyFile(ctx, folder, path)
		switch {
		case err != nil:
			return "", "", nil, err
		case why != "":
			problems = append(problems, fmt.Sprintf("processed version %s: %s", path, why))
		default:
			processed = info.Key
		}
	}
	return original, processed, problems, nil
}

// bringOriginal brings the original version: the content the store
// holds already under the recorded hash, else the first of the recorded
// paths (the immutable original, then the working copy) whose content
// has that hash.
func (w *Wizard) bringOriginal(ctx context.Context, folder *legacy.Folder, r docflow.LegacyRow, hash string) (string, []string, error) {
	if sha256Hex.MatchString(hash) {
		ok, err := w.cfg.Blobs.Exists(ctx, hash)
		if err != nil {
			return "", nil, err
		}
		if ok {
			return hash, nil, nil
		}
	}
	var problems []string
	seen := map[string]bool{}
	for _, path := range []string{rowText(r, "original_file_path"), rowText(r, "local_filename")} {
		if path == "" || seen[path] {
			continue
		}
		seen[path] = true
		info, why, err := w.copyFile(ctx, folder, path)
		if err != nil {
			return "", nil, err
		}
		if why == "" && info.Key != hash {
			w.dropBlob(info)
			why = fmt.Sprintf("its content does not match the recorded hash (%s recorded, %s found)", short(hash), short(info.Key))
		}
		if why != "" {
			problems = append(problems, fmt.Sprintf("original %s: %s", path, why))
			continue
		}
		return info.Key, nil, nil
	}
	if len(problems) == 0 {
		problems = append(problems, "original: no path recorded")
	}
	return "", problems, nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12] + "…"
	}
	return hash
}

// copyFile streams the file at the recorded path into the blob store.
// why says why it was not (refused, missing, unreadable); an error is
// the store's or the context's.
func (w *Wizard) copyFile(ctx context.Context, folder *legacy.Folder, recorded string) (docflow.BlobInfo, string, error) {
	f, _, err := folder.Open(recorded)
	if err != nil {
		return docflow.BlobInfo{}, err.Error(), nil
	}
	defer f.Close()
	rd := &readErr{r: f}
	info, err := w.cfg.Blobs.Put(ctx, rd, 0)
	if err != nil {
		if rd.err != nil && ctx.Err() == nil {
			return docflow.BlobInfo{}, "cannot read it: " + errors.Unwrap(rd.err).Error(), nil
		}
		return docflow.BlobInfo{}, "", err
	}
	return info, "", nil
}

// readErr remembers the reading side's error, to tell a file that cannot
// be read from a store that cannot write.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = fmt.Errorf("read: %w", err)
	}
	return n, err
}

// dropBlob removes a blob this import stored and nothing references (a
// content that was not what its record says).
func (w *Wizard) dropBlob(info docflow.BlobInfo) {
	if !info.Created {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if used, err := w.cfg.BlobRefs.BlobInUse(ctx, info.Key); err != nil || used {
		return
	}
	if err := w.cfg.Blobs.Delete(ctx, info.Key); err != nil {
		w.cfg.Log.Warn().Err(err).Str("blob", info.Key).Msg("database import: removing a content that did not match its hash")
	}
}
