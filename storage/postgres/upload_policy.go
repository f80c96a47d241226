package postgres

import (
	"context"
	"fmt"
	"time"

	"docflow"
)

// UploadPolicy reads the user's profile flags and today's upload count in
// one round trip. A user without a profile is neither blocked nor limited
// beyond the global default.
func (s *FileStore) UploadPolicy(ctx context.Context, userID string) (docflow.UploadPolicy, error) {
	var p docflow.UploadPolicy
	day := s.db.Now().UTC().Format("2006-01-02")
	err := s.db.Pool.QueryRow(ctx, `SELECT COALESCE(p.is_blocked, FALSE), p.daily_upload_limit, COALESCE(c.count, 0)
		FROM (SELECT $1::text AS uid) u
		LEFT JOIN user_profiles p ON p.user_id = u.uid
		LEFT JOIN upload_counters c ON c.owner_id = u.uid AND c.day = $2::date`, userID, day).
		Scan(&p.Blocked, &p.DailyLimit, &p.UsedToday)
	if err != nil {
		return p, fmt.Errorf("upload policy: %w", err)
	}
	return p, nil
}

// WatchSeenExists reports whether the watch folder already took in this
// exact file (same name, size and modification time).
func (s *FileStore) WatchSeenExists(ctx context.Context, w docflow.WatchSeen) (bool, error) {
	var ok bool
	err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM watch_folder_seen
		WHERE folder=$1 AND name=$2 AND size=$3 AND mtime=$4)`,
		w.Folder, w.Name, w.Size, w.MTime.Truncate(time.Microsecond)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("watch seen: %w", err)
	}
	return ok, nil
}

// watchSeenInsert remembers a watch-folder file, with the arguments of
// watchSeenArgs.
const watchSeenInsert = `INSERT INTO watch_folder_seen (folder, name, size, mtime, file_id)
	VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`

// watchSeenArgs are watchSeenInsert's arguments; fileID 0 records a file
// that was refused.
func watchSeenArgs(w docflow.WatchSeen, fileID int64) []any {
	var id *int64
	if fileID > 0 {
		id = &fileID
	}
	return []any{w.Folder, w.Name, w.Size, w.MTime.Truncate(time.Microsecond), id}
}

// RecordWatchSeen remembers a watch-folder file that was refused (a file
// taken in is remembered by Ingest, with its record).
func (s *FileStore) RecordWatchSeen(ctx context.Context, w docflow.WatchSeen) error {
	if _, err := s.db.Pool.Exec(ctx, watchSeenInsert, watchSeenArgs(w, 0)...); err != nil {
		return fmt.Errorf("record watch seen: %w", err)
	}
	return nil
}
