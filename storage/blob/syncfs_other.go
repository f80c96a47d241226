//go:build !linux

package blob

import "errors"

// fsFlusher is not available here: the store syncs file by file.
func fsFlusher(root string) (func() error, func() error, error) {
	return nil, nil, errors.ErrUnsupported
}
