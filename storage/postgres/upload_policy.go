package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// UploadPolicy is what intake needs to know about an uploader before
// reading the body.
type UploadPolicy struct {
	Blocked bool
	// DailyLimit is the profile's daily_upload_limit (nil = the global
	// default; 0 = unlimited).
	DailyLimit *int
	// UsedToday counts the files the user recorded today (UTC).
	UsedToday int
}

// UploadPolicy reads the user's profile flags and today's upload count in
// one round trip. A user without a profile is neither blocked nor limited
// beyond the global default.
func (s *FileService) UploadPolicy(ctx context.Context, userID string) (UploadPolicy, error) {
	var p UploadPolicy
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

// WatchSeen is one file a watch folder has taken in.
type WatchSeen struct {
	Folder string
	Name   string
	Size   int64
	// MTime is truncated to microseconds, PostgreSQL's precision.
	MTime time.Time
}

// WatchSeenExists reports whether the watch folder already took in this
// exact file (same name, size and modification time).
func (s *FileService) WatchSeenExists(ctx context.Context, w WatchSeen) (bool, error) {
	var ok bool
	err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM watch_folder_seen
		WHERE folder=$1 AND name=$2 AND size=$3 AND mtime=$4)`,
		w.Folder, w.Name, w.Size, w.MTime.Truncate(time.Microsecond)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("watch seen: %w", err)
	}
	return ok, nil
}

// RecordWatchSeen remembers a watch-folder file inside tx (the intake
// transaction), so a crash can never separate the record from the memory.
// fileID 0 records a file that was refused.
func RecordWatchSeen(ctx context.Context, tx pgx.Tx, w WatchSeen, fileID int64) error {
	var id *int64
	if fileID > 0 {
		id = &fileID
	}
	_, err := tx.Exec(ctx, `INSERT INTO watch_folder_seen (folder, name, size, mtime, file_id)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
		w.Folder, w.Name, w.Size, w.MTime.Truncate(time.Microsecond), id)
	if err != nil {
		return fmt.Errorf("record watch seen: %w", err)
	}
	return nil
}

// RecordWatchSeenAlone remembers a refused watch-folder file outside any
// intake transaction.
func (s *FileService) RecordWatchSeenAlone(ctx context.Context, w WatchSeen) error {
	return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error { return RecordWatchSeen(ctx, tx, w, 0) })
}
