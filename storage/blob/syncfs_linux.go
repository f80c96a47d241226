package blob

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fsFlusher returns a flush of the whole filesystem that holds root
// (syncfs(2)): data, inodes and directory entries written before the call
// are durable when it returns.
func fsFlusher(root string) (func() error, func() error, error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, nil, fmt.Errorf("blob root %s: %w", root, err)
	}
	fd := int(d.Fd())
	return func() error { return unix.Syncfs(fd) }, d.Close, nil
}
