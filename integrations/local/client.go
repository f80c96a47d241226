package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"docflow"
)

// Client is the docflow.DestinationClient of a LOCAL integration: it
// writes into the integration's folder under its owner's folder of
// LOCAL_DESTINATION_DIR. Each document is written to a hidden temporary
// file in that folder, synced and renamed over the name, so a reader never
// sees half a document and a second delivery replaces the first.
type Client struct {
	root  func() string
	owner string
	path  string
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// NewClient returns the client of a LOCAL integration. root returns
// LOCAL_DESTINATION_DIR, read at each call (an administrator may set it
// later).
func NewClient(root func() string, in *docflow.Integration) (*Client, error) {
	if root == nil {
		return nil, errors.New("local: NewClient needs the root folder")
	}
	path, _ := in.Config["path"].(string)
	return &Client{root: root, owner: in.OwnerID, path: path}, nil
}

// Location implements docflow.DestinationLocation: the folder relative to
// LOCAL_DESTINATION_DIR.
func (c *Client) Location() string {
	return "folder " + filepath.ToSlash(filepath.Join(OwnerFolder(c.owner), strings.TrimLeft(c.path, "/")))
}

// Connect implements docflow.DestinationClient: the folder is resolved
// and created, and temporary files that deliveries killed before their
// rename left in it are removed (RemoveStaleTemps).
func (c *Client) Connect(ctx context.Context) error {
	dir, _, err := c.folder()
	if err != nil {
		return err
	}
	RemoveStaleTemps(dir, staleTempAge)
	return nil
}

// staleTempAge is how old a temporary file of WriteFile must be before
// Connect removes it: far beyond any delivery to a local disk, so that a
// delivery in progress in another process (the system-wide folder is
// shared) is not disturbed.
const staleTempAge = 15 * time.Minute

// RemoveStaleTemps removes WriteFile's temporary files in dir not
// modified for olderThan: what a process killed mid-delivery left. It
// returns how many it removed; errors are ignored (the next connection
// tries again).
func RemoveStaleTemps(dir string, olderThan time.Duration) int {
	matches, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	n := 0
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > olderThan {
			if os.Remove(m) == nil {
				n++
			}
		}
	}
	return n
}

// tempPrefix names WriteFile's temporary files (hidden).
const tempPrefix = ".incoming-"

// Close implements docflow.DestinationClient; a local folder holds nothing
// open between deliveries.
func (c *Client) Close(context.Context) error { return nil }

// folder resolves, creates and checks the folder: it returns the real
// path and the path relative to LOCAL_DESTINATION_DIR shown to users.
func (c *Client) folder() (dir, shown string, err error) {
	root := strings.TrimSpace(c.root())
	dir, err = Folder(root, c.owner, c.path)
	if err != nil {
		return "", "", docflow.DestFail(docflow.DestUnavailable, err.Error(), err)
	}
	shown = filepath.ToSlash(strings.TrimPrefix(dir, filepath.Clean(root)+string(filepath.Separator)))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", "", fsFailure("cannot create folder "+shown, err)
	}
	// A symbolic link inside the tree must not lead out of it.
	realRoot, err1 := filepath.EvalSymlinks(root)
	realDir, err2 := filepath.EvalSymlinks(dir)
	if err := errors.Join(err1, err2); err != nil {
		return "", "", fsFailure("cannot open folder "+shown, err)
	}
	if rel, err := filepath.Rel(realRoot, realDir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", docflow.DestFail(docflow.DestForbidden, fmt.Sprintf("folder %s leads outside LOCAL_DESTINATION_DIR", shown), nil)
	}
	return dir, shown, nil
}

// Deliver implements docflow.DestinationClient. The remote path is the
// file's path relative to LOCAL_DESTINATION_DIR.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	dir, shown, err := c.folder()
	if err != nil {
		return "", err
	}
	if err := WriteFile(ctx, dir, doc.Name, body); err != nil {
		return "", fsFailure("cannot write in folder "+shown, err)
	}
	return shown + "/" + doc.Name, nil
}

// Probe implements docflow.DestinationClient: the folder is created and a
// small file written in it and removed.
func (c *Client) Probe(ctx context.Context) error {
	dir, shown, err := c.folder()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return docflow.DestFail(docflow.DestUnavailable, "cancelled", err)
	}
	f, err := os.CreateTemp(dir, ".docflow-test-*")
	if err != nil {
		return fsFailure("cannot write in folder "+shown, err)
	}
	defer os.Remove(f.Name()) //nolint:errcheck // the probe goes either way
	_, werr := f.WriteString("docflow test\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return fsFailure("cannot write in folder "+shown, err)
	}
	return nil
}

// WriteFile writes body to dir/name through a hidden temporary file in
// dir, synced, then renamed over name: a reader sees the old document or
// the new one, never a part, and a crash leaves at most the temporary
// file. ctx cancels the copy.
func WriteFile(ctx context.Context, dir, name string, body io.Reader) error {
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := io.Copy(tmp, ctxReader{ctx: ctx, r: body}); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// fsFailure classes a file system error: permission or a read-only file
// system is DestForbidden, a full disk or quota DestFull, anything else
// DestUnavailable. The reason is what the folder is with the system's
// words for the error, never the machine's paths.
func fsFailure(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return docflow.DestFail(docflow.DestUnavailable, what+": cancelled", err)
	}
	class := docflow.DestUnavailable
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		class = docflow.DestForbidden
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		class = docflow.DestFull
	}
	reason := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		reason = pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		reason = le.Err.Error()
	}
	return docflow.DestFail(class, what+": "+reason, err)
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
