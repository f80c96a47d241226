package legacy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"docflow"
)

// DefaultWorkdir is the original service's WORKDIR when it was not set:
// its records name files under it (/workdir/original/<uuid>.pdf).
const DefaultWorkdir = "/workdir"

// Folder is the original service's work folder as this machine sees it
// (mounted or copied here), read only. The original records absolute
// paths under its own WORKDIR (original/, tmp/, processed/); Folder finds
// them under its root, and refuses any path that would leave it: one
// that climbs out (../), an absolute path under neither the original's
// WORKDIR nor the root, or a symbolic link pointing outside (os.Root
// confines every step of the path).
type Folder struct {
	dir     string
	workdir string
	root    *os.Root
}

// Reasons a recorded path is not read; errors.Is finds them.
var (
	// ErrOutside is a path that leaves the work folder: refused.
	ErrOutside = errors.New("the path leaves the original's work folder: refused")
	// ErrMissing is a path with no file behind it.
	ErrMissing = errors.New("no file at this path")
	// ErrNotFile is a path naming a folder, a device or a pipe.
	ErrNotFile = errors.New("not a regular file")
)

// OpenFolder opens dir, an absolute path of a folder on this machine,
// as the original's work folder; workdir is the folder the original's
// records name (its WORKDIR; "" for DefaultWorkdir). EINVALID says what
// is wrong with dir.
func OpenFolder(dir, workdir string) (*Folder, error) {
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		return nil, docflow.Errorf(docflow.EINVALID, "source_files_dir must be an absolute path of a folder on the docflow machine")
	}
	workdir = strings.TrimSpace(workdir)
	if workdir == "" {
		workdir = DefaultWorkdir
	}
	if !filepath.IsAbs(workdir) {
		return nil, docflow.Errorf(docflow.EINVALID, "source_workdir must be an absolute path (the original's WORKDIR, %s by default)", DefaultWorkdir)
	}
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, docflow.Errorf(docflow.EINVALID, "source_files_dir %s does not exist on the docflow machine", dir)
	case err != nil:
		return nil, docflow.Errorf(docflow.EINVALID, "source_files_dir %s cannot be read: %v", dir, errors.Unwrap(err))
	case !st.IsDir():
		return nil, docflow.Errorf(docflow.EINVALID, "source_files_dir %s is not a folder", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, docflow.Errorf(docflow.EINVALID, "source_files_dir %s cannot be opened: %v", dir, errors.Unwrap(err))
	}
	return &Folder{dir: dir, workdir: filepath.Clean(workdir), root: root}, nil
}

// Dir is the folder's path on this machine.
func (f *Folder) Dir() string { return f.dir }

// Close releases the folder.
func (f *Folder) Close() error { return f.root.Close() }

// Rel is where recorded (a path from the original's records) is inside
// the folder: a path under the original's WORKDIR or under the folder
// itself is taken relative to it, a relative path as it is. ErrOutside
// for anything else and for a path that climbs out.
func (f *Folder) Rel(recorded string) (string, error) {
	p := strings.TrimSpace(recorded)
	if p == "" || strings.ContainsRune(p, 0) {
		return "", ErrMissing
	}
	if filepath.IsAbs(p) {
		p = filepath.Clean(p)
		rel := ""
		for _, base := range []string{f.workdir, f.dir} {
			if r, err := filepath.Rel(base, p); err == nil && filepath.IsLocal(r) {
				rel = r
				break
			}
		}
		if rel == "" {
			return "", ErrOutside
		}
		p = rel
	}
	if !filepath.IsLocal(p) {
		return "", ErrOutside
	}
	return filepath.Clean(p), nil
}

// Open opens the file recorded names for reading, with its size: a
// regular file inside the folder only. The errors are ErrOutside,
// ErrMissing, ErrNotFile, or the system's reason it cannot be read.
func (f *Folder) Open(recorded string) (io.ReadCloser, int64, error) {
	rel, err := f.Rel(recorded)
	if err != nil {
		return nil, 0, err
	}
	// Stat first: opening a pipe would wait for a writer.
	st, err := f.root.Stat(rel)
	if err != nil {
		return nil, 0, folderError(err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, ErrNotFile
	}
	file, err := f.root.Open(rel)
	if err != nil {
		return nil, 0, folderError(err)
	}
	st, err = file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		file.Close()
		if err != nil {
			return nil, 0, folderError(err)
		}
		return nil, 0, ErrNotFile
	}
	return file, st.Size(), nil
}

// folderError names err's class: a path escaping the root (a symbolic
// link out) is ErrOutside, a missing file ErrMissing, others the
// system's reason without the path.
func folderError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrMissing
	case strings.Contains(err.Error(), "path escapes from parent"):
		return ErrOutside
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot read it: %w", pe.Err)
	}
	return err
}
