package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"

	"docflow/internal/dbwizard"
	"docflow/storage/postgres"
)

// databaseWizard builds the database wizard of this process; Close stops
// its running migrations (they stay resumable).
func (m *App) databaseWizard() *dbwizard.Wizard {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	w := dbwizard.New(dbwizard.Config{DB: m.DB, Jobs: postgres.NewMigrationJobStore(m.DB), Blobs: m.Blobs, BlobRefs: m.Files,
		Log:   m.Log.With().Str("component", "dbwizard").Logger(),
		Owner: host + "/" + hex.EncodeToString(b)})
	m.onClose("database wizard", func(context.Context) error { w.Close(); return nil })
	return w
}
