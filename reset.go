package docflow

import "context"

// The system reset (interface.md "System reset"): an administrator wipes
// docflow's content, with ENABLE_FACTORY_RESET on, either for good (full)
// or to take every original through the pipeline again (reimport).
const (
	// ResetFull wipes the database's content and the work files.
	ResetFull = "full"
	// ResetReimport moves the originals to the reimport folder first and
	// watches that folder once the rest is wiped.
	ResetReimport = "reimport"
)

// ResetConfirmation is the confirmation each mode needs, typed by the
// administrator.
var ResetConfirmation = map[string]string{ResetFull: "DELETE", ResetReimport: "REIMPORT"}

// ResetFilesystem counts the work files a reset removed.
type ResetFilesystem struct {
	DeletedDirs  int `json:"deleted_dirs"`
	DeletedFiles int `json:"deleted_files"`
}

// ResetReimportResult says where a reimport put the originals.
type ResetReimportResult struct {
	FilesMoved     int    `json:"files_moved"`
	ReimportFolder string `json:"reimport_folder"`
}

// ResetResult is what a reset did: the rows each table held, the files
// removed and, for a reimport, the originals moved.
type ResetResult struct {
	ID         string               `json:"reset_id"`
	Database   map[string]int64     `json:"database"`
	Filesystem ResetFilesystem      `json:"filesystem"`
	Reimport   *ResetReimportResult `json:"reimport,omitempty"`
}

// ResetOriginal is one original a reimport takes back: the blob of a
// file's upload and the name it came with.
type ResetOriginal struct {
	FileID int64
	Name   string
	Blob   string
}

// ResetWipe is what the wipe's transaction writes besides emptying the
// tables: settings (non-sensitive only) and outbox messages, so that they
// commit with the wipe or not at all.
type ResetWipe struct {
	Settings map[string]string
	Messages []OutboxMessage
}

// SystemResetter runs a reset of mode (ResetFull or ResetReimport) for
// actor, the administrator's user id. EFORBIDDEN when ENABLE_FACTORY_RESET
// is off, EINVALID for an unknown mode, ECONFLICT while another reset runs.
type SystemResetter interface {
	Reset(ctx context.Context, mode, actor string) (*ResetResult, error)
}
