package blob_test

import (
	"testing"

	"docflow/storage/blob"
	"docflow/storage/blob/blobtest"
)

func TestLocalContract(t *testing.T) {
	blobtest.RunContract(t, func(t *testing.T) blobtest.Store {
		l, err := blob.Open(t.TempDir(), blob.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return blobtest.Store{BlobStore: l, Leftovers: l.TempCount}
	})
}
