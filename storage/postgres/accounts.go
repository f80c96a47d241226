package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// AccountStore implements docflow.AccountStore on the local_users and
// password_resets tables. The user.signup event of a new account is
// written to the outbox in the transaction that creates it.
type AccountStore struct {
	db     *DB
	events docflow.EventEncoder
	hasher docflow.PasswordHasher
	now    func() time.Time
	// dummy is a hash verified when no account matches a sign-in, so an
	// unknown name costs what a wrong password does.
	dummy string
}

var _ docflow.AccountStore = (*AccountStore)(nil)

// NewAccountStore returns the local account store on db. events encodes
// user.signup (streams.EncodeEvent), hasher hashes passwords
// (internal/passwd), now is the clock of token expiry (nil: db.Now).
func NewAccountStore(db *DB, events docflow.EventEncoder, hasher docflow.PasswordHasher, now func() time.Time) *AccountStore {
	if db == nil || events == nil || hasher == nil {
		panic("postgres: NewAccountStore needs a DB, an EventEncoder and a PasswordHasher")
	}
	if now == nil {
		now = func() time.Time { return db.Now() }
	}
	dummy, err := hasher.Hash("no account has this password")
	if err != nil {
		panic(fmt.Sprintf("postgres: hash the dummy password: %v", err))
	}
	return &AccountStore{db: db, events: events, hasher: hasher, now: now, dummy: dummy}
}

const localUserCols = `id, email, username, display_name, password_hash, is_admin, is_active, created_at, updated_at`

func scanLocalUser(row pgx.Row) (*docflow.LocalUser, error) {
	var u docflow.LocalUser
	err := row.Scan(&u.ID, &u.Email, &u.Username, &u.DisplayName, &u.PasswordHash, &u.IsAdmin, &u.IsActive, &u.CreatedAt, &u.UpdatedAt)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// uniqueViolation names the unique index a 23505 error broke, or "".
func uniqueViolation(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return pgErr.ConstraintName
	}
	return ""
}

func takenError(constraint string) error {
	if constraint == "local_users_username" {
		return docflow.Errorf(docflow.ECONFLICT, "username taken")
	}
	return docflow.Errorf(docflow.ECONFLICT, "email taken")
}

// CreateLocalUser creates the account, its profile and user.signup.
func (s *AccountStore) CreateLocalUser(ctx context.Context, in docflow.LocalUserInput) (*docflow.LocalUser, error) {
	hash, err := s.hasher.Hash(in.Password)
	if err != nil {
		return nil, err
	}
	var u *docflow.LocalUser
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		now := s.now()
		// NOTE: another identity (an SSO user) may already own files and a
		// profile under this e-mail: an account may not take its place.
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM user_profiles WHERE lower(user_id)=lower($1))
			+ (SELECT count(*) FROM sso_users WHERE lower(user_id)=lower($1))`, in.Email).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return docflow.Errorf(docflow.ECONFLICT, "email taken")
		}
		u, err = scanLocalUser(tx.QueryRow(ctx, `INSERT INTO local_users (email, username, display_name, password_hash, is_admin, is_active, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, TRUE, $6, $6) RETURNING `+localUserCols,
			in.Email, in.Username, in.DisplayName, hash, in.IsAdmin, now))
		if err != nil {
			if c := uniqueViolation(err); c != "" {
				return takenError(c)
			}
			return err
		}
		_, err = ensureProfileTx(ctx, tx, s.events, u.Email, u.DisplayName, "local", now)
		return err
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return u, nil
}

// ListLocalUsers returns every account, oldest first.
func (s *AccountStore) ListLocalUsers(ctx context.Context) ([]*docflow.LocalUser, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+localUserCols+` FROM local_users ORDER BY id`)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	out := []*docflow.LocalUser{}
	for rows.Next() {
		u, err := scanLocalUser(rows)
		if err != nil {
			return nil, dbErr(err)
		}
		out = append(out, u)
	}
	return out, dbErr(rows.Err())
}

// FindLocalUser returns the account id, or ENOTFOUND.
func (s *AccountStore) FindLocalUser(ctx context.Context, id int64) (*docflow.LocalUser, error) {
	u, err := scanLocalUser(s.db.Pool.QueryRow(ctx, `SELECT `+localUserCols+` FROM local_users WHERE id=$1`, id))
	if err != nil {
		return nil, notFound(err, "Local user not found")
	}
	return u, nil
}

// FindLocalUserByLogin matches the e-mail first, then the user name.
func (s *AccountStore) FindLocalUserByLogin(ctx context.Context, login string) (*docflow.LocalUser, error) {
	login = strings.TrimSpace(login)
	if login == "" {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Local user not found")
	}
	u, err := scanLocalUser(s.db.Pool.QueryRow(ctx, `SELECT `+localUserCols+` FROM local_users
		WHERE lower(email)=lower($1) OR lower(username)=lower($1)
		ORDER BY (lower(email)=lower($1)) DESC, id LIMIT 1`, login))
	if err != nil {
		return nil, notFound(err, "Local user not found")
	}
	return u, nil
}

// SetLocalPassword stores a new hash and, in the same transaction, ends
// every other way in: the account's reset links are spent, its API tokens
// revoked and its sessions deleted (endAccessTx).
func (s *AccountStore) SetLocalPassword(ctx context.Context, id int64, password string) error {
	hash, err := s.hasher.Hash(password)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		now := s.now()
		var email string
		err := tx.QueryRow(ctx, `UPDATE local_users SET password_hash=$2, updated_at=$3 WHERE id=$1 RETURNING email`, id, hash, now).Scan(&email)
		if err != nil {
			return notFound(err, "Local user not found")
		}
		return endAccessTx(ctx, tx, id, email, now)
	})
	return dbErr(err)
}

// DeleteLocalUser removes the account (its reset links cascade), its
// profile, its sessions and its API tokens; the other things it owns
// stay. The tokens are deleted, not marked revoked: no one may list or
// reactivate them any more, even a later account with the same e-mail.
func (s *AccountStore) DeleteLocalUser(ctx context.Context, id int64) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var email string
		if err := tx.QueryRow(ctx, `DELETE FROM local_users WHERE id=$1 RETURNING email`, id).Scan(&email); err != nil {
			return notFound(err, "Local user not found")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM user_profiles WHERE user_id=$1`, email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE owner_id=$1`, email); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id=$1`, email)
		return err
	})
	return dbErr(err)
}

// Authenticate verifies login's password; see docflow.AccountStore.
func (s *AccountStore) Authenticate(ctx context.Context, login, password string) (*docflow.LocalUser, error) {
	bad := docflow.Errorf(docflow.EUNAUTHORIZED, "Invalid username or password")
	u, err := s.FindLocalUserByLogin(ctx, login)
	if err != nil && docflow.ErrorCode(err) != docflow.ENOTFOUND {
		return nil, err
	}
	if u == nil {
		// Same cost as a wrong password.
		if _, err := s.hasher.Verify(password, s.dummy); docflow.ErrorCode(err) == docflow.ERATELIMIT {
			return nil, err
		}
		return nil, bad
	}
	ok, err := s.hasher.Verify(password, u.PasswordHash)
	if docflow.ErrorCode(err) == docflow.ERATELIMIT {
		return nil, err
	}
	if err != nil || !ok || !u.IsActive {
		return nil, bad
	}
	if s.hasher.NeedsRehash(u.PasswordHash) {
		// NOTE: the new hash changes the password stamp, so this signs the
		// account's other sessions out once, when the parameters change.
		if hash, err := s.hasher.Hash(password); err == nil {
			if _, err := s.db.Pool.Exec(ctx, `UPDATE local_users SET password_hash=$2 WHERE id=$1 AND password_hash=$3`, u.ID, hash, u.PasswordHash); err == nil {
				u.PasswordHash = hash
			}
		}
	}
	return u, nil
}

// IsLocalAdmin reports whether userID is an active local admin.
func (s *AccountStore) IsLocalAdmin(ctx context.Context, userID string) (bool, error) {
	if userID == "" {
		return false, nil
	}
	var ok bool
	err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM local_users WHERE lower(email)=lower($1) AND is_admin AND is_active)`, userID).Scan(&ok)
	return ok, dbErr(err)
}

func hashResetToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateResetToken stores the hash of a new random token.
func (s *AccountStore) CreateResetToken(ctx context.Context, id int64) (string, time.Time, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", time.Time{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	now := s.now()
	expires := now.Add(docflow.ResetTokenTTL)
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		// Expired and used tokens of the account are of no use any more.
		if _, err := tx.Exec(ctx, `DELETE FROM password_resets WHERE local_user_id=$1 AND (used_at IS NOT NULL OR expires_at <= $2)`, id, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO password_resets (token_hash, local_user_id, expires_at) VALUES ($1, $2, $3)`,
			hashResetToken(token), id, expires)
		return err
	})
	if err != nil {
		if docflow.ErrorCode(dbErr(err)) == docflow.ENOTFOUND {
			return "", time.Time{}, docflow.Errorf(docflow.ENOTFOUND, "Local user not found")
		}
		return "", time.Time{}, dbErr(err)
	}
	return token, expires, nil
}

// ResetPassword consumes token and sets the password in one transaction;
// the account's other reset links are spent, its API tokens revoked and
// its sessions deleted there too (endAccessTx). The token is looked up
// before the password is hashed, so a guessed token costs a query, not a
// hash; the transaction takes it again, in case it was spent meanwhile.
func (s *AccountStore) ResetPassword(ctx context.Context, token, password string) (*docflow.LocalUser, error) {
	invalid := docflow.Errorf(docflow.EBADREQUEST, "Invalid or expired reset token")
	if token == "" || len(token) > 256 {
		return nil, invalid
	}
	var valid bool
	if err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM password_resets
		WHERE token_hash=$1 AND used_at IS NULL AND expires_at > $2)`, hashResetToken(token), s.now()).Scan(&valid); err != nil {
		return nil, dbErr(err)
	}
	if !valid {
		return nil, invalid
	}
	hash, err := s.hasher.Hash(password)
	if err != nil {
		return nil, err
	}
	var u *docflow.LocalUser
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		now := s.now()
		var id int64
		err := tx.QueryRow(ctx, `UPDATE password_resets SET used_at=$2
			WHERE token_hash=$1 AND used_at IS NULL AND expires_at > $2 RETURNING local_user_id`, hashResetToken(token), now).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return invalid
		}
		if err != nil {
			return err
		}
		u, err = scanLocalUser(tx.QueryRow(ctx, `UPDATE local_users SET password_hash=$2, updated_at=$3 WHERE id=$1 RETURNING `+localUserCols, id, hash, now))
		if err != nil {
			return err
		}
		return endAccessTx(ctx, tx, id, u.Email, now)
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return u, nil
}
