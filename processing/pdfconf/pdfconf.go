// Package pdfconf hands out pdfcpu configurations. pdfcpu's own
// model.NewDefaultConfiguration writes a config.yml under the user's
// config folder on first use and caches it in a package variable without
// a lock, which races when steps run concurrently and leaves files behind;
// docflow never reads such a file, so it turns that off once and builds
// each configuration afresh.
package pdfconf

import (
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

var once sync.Once

// New returns a fresh default configuration, safe for concurrent use.
func New() *model.Configuration {
	once.Do(func() { model.ConfigPath = "disable" })
	return model.NewDefaultConfiguration()
}
