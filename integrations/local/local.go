// Package local is the LOCAL destination: a folder on the docflow machine,
// always inside LOCAL_DESTINATION_DIR. A user's LOCAL integration names a
// folder inside that user's own subfolder, LOCAL_DESTINATION_DIR/<owner>/
// (the subfolder send_to_destinations' local folder delivers the owner's
// files to), so no user can read, fill or overwrite another's folder or
// any other place on the machine.
package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"docflow"
)

// OwnerFolder is the name of owner's subfolder: path separators and
// control characters become "_", leading dots are dropped, and no owner is
// "shared" (as send_to_destinations names it).
func OwnerFolder(owner string) string {
	s := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 32 || r == 0x7f {
			return '_'
		}
		return r
	}, owner)
	s = strings.TrimLeft(s, ".")
	if s == "" {
		s = "shared"
	}
	return s
}

// Folder resolves a LOCAL integration's config.path for owner under root:
// root/<owner folder>/<path>. The path is taken relative to the owner's
// folder (a leading "/" included); a result outside it is an error.
func Folder(root, owner, path string) (string, error) {
	root = strings.TrimSpace(root)
	if root == "" {
		return "", errors.New("LOCAL_DESTINATION_DIR is not set: an administrator must set it before LOCAL destinations can be used")
	}
	base := filepath.Join(root, OwnerFolder(owner))
	dir := filepath.Join(base, filepath.FromSlash(strings.TrimLeft(filepath.ToSlash(path), "/")))
	if rel, err := filepath.Rel(base, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("config.path %q leaves your local destination folder", path)
	}
	return dir, nil
}

// Tester tests LOCAL destinations (docflow.DestinationTester over
// Client): the folder can be created and a file written in it (and
// removed again).
type Tester struct {
	// Root returns LOCAL_DESTINATION_DIR, read at each test.
	Root func() string
}

var _ docflow.IntegrationTester = Tester{}

// TestIntegration implements docflow.IntegrationTester. Messages name the
// folder relative to LOCAL_DESTINATION_DIR, never the machine's paths.
func (t Tester) TestIntegration(ctx context.Context, in *docflow.Integration) (bool, string) {
	return docflow.DestinationTester{New: func(in *docflow.Integration) (docflow.DestinationClient, error) {
		return NewClient(t.Root, in)
	}}.TestIntegration(ctx, in)
}
