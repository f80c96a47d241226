package docflow

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Comment is a remark on a file, possibly a reply to another comment of
// the same file. Replies is filled in listings only.
type Comment struct {
	ID         int64      `json:"id"`
	FileID     int64      `json:"file_id"`
	UserID     string     `json:"user_id"`
	ParentID   *int64     `json:"parent_id"`
	Body       string     `json:"body"`
	Mentions   []string   `json:"mentions"`
	IsResolved bool       `json:"is_resolved"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Replies    []*Comment `json:"replies"`
}

// MaxCommentLength caps a comment's body, in characters (decisions.md).
const MaxCommentLength = 10_000

// MaxMentions caps the @mentions taken from one comment; later ones are
// left as plain text.
const MaxMentions = 50

// CheckCommentBody validates a comment's body: 1 to MaxCommentLength
// characters, not only white space. The body is kept exactly as given.
func CheckCommentBody(body string) error {
	bad := func(msg string) error {
		e := Errorf(EINVALID, "%s", msg)
		e.Fields = []FieldError{{Field: "body", Message: msg}}
		return e
	}
	if strings.TrimSpace(body) == "" {
		return bad("body must not be empty")
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentLength {
		return bad("body must be at most 10000 characters")
	}
	return nil
}

// ExtractMentions returns the names @mentioned in body, each once, in the
// order of first appearance, at most MaxMentions: "@ann@example.com" gives
// "ann@example.com" (a user id is an e-mail address), "@ann" gives "ann"
// (a local account's username). An @ inside a word ("mail@host") starts
// no mention, and trailing dots and dashes (end of a sentence) are not
// part of a name. Which names are users is the store's to decide.
func ExtractMentions(body string) []string {
	var out []string
	seen := map[string]bool{}
	prev := ' '
	for i := 0; i < len(body); {
		r, size := utf8.DecodeRuneInString(body[i:])
		if r != '@' || isMentionRune(prev) || prev == '@' {
			prev = r
			i += size
			continue
		}
		j := i + size
		for j < len(body) {
			q, n := utf8.DecodeRuneInString(body[j:])
			if !isMentionRune(q) && q != '@' {
				break
			}
			j += n
		}
		name := strings.TrimRight(body[i+size:j], ".-@")
		if validMention(name) && !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			out = append(out, name)
			if len(out) == MaxMentions {
				return out
			}
		}
		prev = '@'
		if j > i+size {
			prev, _ = utf8.DecodeLastRuneInString(body[:j])
		}
		i = j
	}
	return out
}

func isMentionRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._%+-", r)
}

// validMention accepts a username (letters, digits, . _ -) or an e-mail
// address with one @ and a dotted domain, each at most 320 bytes.
func validMention(name string) bool {
	if name == "" || len(name) > MaxUserIDLength {
		return false
	}
	local, domain, isMail := strings.Cut(name, "@")
	if !isMail {
		return !strings.ContainsAny(name, "%+")
	}
	return local != "" && !strings.Contains(domain, "@") && strings.Contains(domain, ".") &&
		!strings.HasPrefix(domain, ".") && !strings.ContainsAny(domain, "%+_")
}

// ThreadComments nests replies under their parents: it returns the
// top-level comments, each with its replies (and theirs), all in the order
// of flat, which is creation order. A reply whose parent is not in flat is
// shown at the top level.
func ThreadComments(flat []*Comment) []*Comment {
	byID := make(map[int64]*Comment, len(flat))
	for _, c := range flat {
		c.Replies = []*Comment{}
		byID[c.ID] = c
	}
	roots := []*Comment{}
	for _, c := range flat {
		if c.ParentID != nil {
			if p := byID[*c.ParentID]; p != nil && p != c {
				p.Replies = append(p.Replies, c)
				continue
			}
		}
		roots = append(roots, c)
	}
	return roots
}

// MentionGrants are the shares a comment's mentions gave (Granted) and
// those that ended because no comment's mention holds them any more
// (Ended).
type MentionGrants struct {
	Granted []*Share
	Ended   []*Share
}

// CommentStore keeps the comments of files. Comments are looked up within
// their file: a comment of another file is ENOTFOUND.
type CommentStore interface {
	// ListComments returns the file's comments in creation order, flat.
	ListComments(ctx context.Context, fileID int64) ([]*Comment, error)
	// FindComment returns one comment of the file.
	FindComment(ctx context.Context, fileID, id int64) (*Comment, error)
	// ResolveMentions returns the users names (ExtractMentions of a body)
	// name, in the order of names, each once: a local account's username
	// or e-mail gives the account's user id (its e-mail), else a profile's
	// user id as written; unknown names and blocked users are none. Each
	// carries the role a share gives them on the file; IsAdmin is left to
	// the caller.
	ResolveMentions(ctx context.Context, fileID int64, names []string) ([]Mentioned, error)
	// CreateComment stores c (FileID, UserID, ParentID, Body, Mentions set)
	// after checking that its parent is a comment of the same file
	// (EINVALID naming parent_id otherwise). Each user of grant
	// (MentionReach.Grant) without a share of the owned file gets a viewer
	// share held by the comment, in the same transaction; a share an
	// earlier mention gave is held by this comment too. The shares created
	// are returned.
	CreateComment(ctx context.Context, c *Comment, grant []string) ([]*Share, error)
	// UpdateComment replaces a comment's body and mentions and grants as
	// CreateComment; the comment stops holding the shares of users it no
	// longer mentions, and a share no comment holds any more ends, unless
	// the owner shared the file with the user meanwhile (ShareStore's
	// PutShare and UpdateShare make a share the owner's).
	UpdateComment(ctx context.Context, fileID, id int64, body string, mentions, grant []string) (*Comment, MentionGrants, error)
	// ResolveComment sets is_resolved.
	ResolveComment(ctx context.Context, fileID, id int64, resolved bool) (*Comment, error)
	// DeleteComment removes a comment and its replies, and returns the
	// shares that ended because only they held them (as UpdateComment).
	DeleteComment(ctx context.Context, fileID, id int64) ([]*Share, error)
}
