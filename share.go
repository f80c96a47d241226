package docflow

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Share gives a user other than the owner a role on one file (roles and
// their rights are Authorize's table).
type Share struct {
	ID               int64     `json:"id"`
	FileID           int64     `json:"file_id"`
	OwnerID          string    `json:"owner_id"`
	SharedWithUserID string    `json:"shared_with_user_id"`
	Role             string    `json:"role"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// SharedWith is one line of GET /api/files/{file_id}/shared-with: whom a
// file is shared with, under the display name of their profile (their
// user id when the profile has none).
type SharedWith struct {
	ShareID     int64  `json:"share_id"`
	UserID      string `json:"user_id"`
	DisplayName string `json:"display_name"`
	Role        string `json:"role"`
}

// MaxUserIDLength caps a user id given in a request (a share's user).
const MaxUserIDLength = 320

// ValidShareRole reports whether role is one of the share roles.
func ValidShareRole(role string) bool { return role == RoleViewer || role == RoleEditor }

// CheckShareTarget validates the user a share is for: not empty, not too
// long, neither the caller nor the file's owner (sharing with oneself).
// It returns the trimmed id, or EINVALID naming shared_with_user_id.
func CheckShareTarget(userID, caller string, ownerID *string) (string, error) {
	id := strings.TrimSpace(userID)
	bad := func(msg string) error {
		e := Errorf(EINVALID, "%s", msg)
		e.Fields = []FieldError{{Field: "shared_with_user_id", Message: msg}}
		return e
	}
	switch {
	case id == "":
		return "", bad("shared_with_user_id must not be empty")
	case utf8.RuneCountInString(id) > MaxUserIDLength:
		return "", bad("shared_with_user_id is too long")
	case id == caller:
		return "", bad("You cannot share a file with yourself")
	case ownerID != nil && id == *ownerID:
		return "", bad("The file's owner already has every right on it")
	}
	return id, nil
}

// ShareStore keeps the shares of files. Ids of shares are looked up within
// their file: a share of another file is ENOTFOUND.
type ShareStore interface {
	// ListShares returns the file's shares, oldest first.
	ListShares(ctx context.Context, fileID int64) ([]*Share, error)
	// SharedWith returns whom the file is shared with, oldest share first,
	// with their profiles' display names.
	SharedWith(ctx context.Context, fileID int64) ([]SharedWith, error)
	// PutShare shares the file with userID under role, for the file's
	// owner ownerID; a share the user has already gets the role, and one a
	// mention gave becomes the owner's (it no longer ends with the
	// comments that mention the user). created says which happened.
	// ENOTFOUND when the file is gone.
	PutShare(ctx context.Context, fileID int64, ownerID, userID, role string) (s *Share, created bool, err error)
	// UpdateShare sets the role of a share of the file; one a mention gave
	// becomes the owner's, as with PutShare.
	UpdateShare(ctx context.Context, fileID, shareID int64, role string) (*Share, error)
	// DeleteShare removes a share of the file and returns it.
	DeleteShare(ctx context.Context, fileID, shareID int64) (*Share, error)
}
