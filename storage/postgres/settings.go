package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"docflow"
)

// SettingsStore implements docflow.SettingsStore: database values (kept
// in memory; every process reloads them when PostgreSQL notifies a change,
// see Start), then the environment, then the catalogue default.
type SettingsStore struct {
	db     *DB
	cipher *Cipher
	getenv func(string) string
	log    zerolog.Logger

	defs  map[string]docflow.SettingDef
	order []string

	mu      sync.RWMutex
	values  map[string]string // decrypted database values
	updated map[string]time.Time
	// envOnly are the keys a process reads from its environment before
	// the database opens (EnvOnly): a database value would never apply.
	envOnly map[string]bool
	// onChange are called after a reload that changed database values
	// (OnChange).
	onChange []func(keys []string)

	// listening is closed once the listener listens (settings_listen.go).
	listening chan struct{}
	stop      context.CancelFunc
	done      chan struct{}
}

var _ docflow.SettingsStore = (*SettingsStore)(nil)

// NewSettingsStore loads the database values. getenv nil = os.Getenv.
func NewSettingsStore(ctx context.Context, db *DB, c *Cipher, getenv func(string) string, log zerolog.Logger) (*SettingsStore, error) {
	if db == nil || c == nil {
		panic("postgres: NewSettingsStore needs a DB and a Cipher")
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	s := &SettingsStore{db: db, cipher: c, getenv: getenv, log: log, defs: map[string]docflow.SettingDef{},
		envOnly: map[string]bool{}, listening: make(chan struct{})}
	for _, d := range docflow.Catalogue() {
		s.defs[d.Key] = d
		s.order = append(s.order, d.Key)
	}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads every database value; the callbacks of OnChange hear of
// the keys whose database value changed.
func (s *SettingsStore) Reload(ctx context.Context) error {
	rows, err := s.db.Pool.Query(ctx, `SELECT key, value, encrypted, updated_at FROM settings`)
	if err != nil {
		return fmt.Errorf("load settings: %w", err)
	}
	defer rows.Close()
	values := map[string]string{}
	updated := map[string]time.Time{}
	for rows.Next() {
		var key, value string
		var enc bool
		var at time.Time
		if err := rows.Scan(&key, &value, &enc, &at); err != nil {
			return fmt.Errorf("load settings: %w", err)
		}
		if enc {
			plain, err := s.cipher.Decrypt(value)
			if err != nil {
				s.log.Warn().Str("key", key).Err(err).Msg("stored setting unreadable; using env or default")
				continue
			}
			value = plain
		}
		values[key] = value
		updated[key] = at
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	changed := changedKeys(s.values, values)
	s.values, s.updated = values, updated
	hooks := s.onChange
	s.mu.Unlock()
	if len(changed) > 0 {
		for _, f := range hooks {
			f(changed)
		}
	}
	return nil
}

// changedKeys are the keys whose value differs between old and new, sorted.
func changedKeys(old, new map[string]string) []string {
	var out []string
	for k, v := range new {
		if o, ok := old[k]; !ok || o != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// OnChange calls f, after a reload, with the keys whose database value
// changed (in this process or another). f runs on the listener's
// goroutine: it must not block. Register before Start.
func (s *SettingsStore) OnChange(f func(keys []string)) {
	s.mu.Lock()
	s.onChange = append(s.onChange, f)
	s.mu.Unlock()
}

// EnvOnly marks keys a process reads from its environment before the
// database opens (DATABASE_URL, WORKDIR, SESSION_SECRET, LOG_FORMAT): Set refuses
// them, since a database value would never apply.
func (s *SettingsStore) EnvOnly(keys ...string) {
	s.mu.Lock()
	for _, k := range keys {
		s.envOnly[k] = true
	}
	s.mu.Unlock()
}

// Get returns the effective value of key.
func (s *SettingsStore) Get(key string) string {
	s.mu.RLock()
	v, ok := s.values[key]
	s.mu.RUnlock()
	if ok {
		return v
	}
	if v := s.getenv(key); v != "" {
		return v
	}
	return s.defs[key].Default
}

func (s *SettingsStore) effective(key string) *docflow.Setting {
	def := s.defs[key]
	st := &docflow.Setting{SettingDef: def}
	if def.Options == nil {
		st.Options = []string{}
	}
	s.mu.RLock()
	v, ok := s.values[key]
	at, hasAt := s.updated[key]
	s.mu.RUnlock()
	st.EnvOnly = s.isEnvOnly(key)
	switch {
	case ok:
		st.Value, st.Source = v, "db"
		if hasAt {
			st.UpdatedAt = &at
		}
	case s.getenv(key) != "":
		st.Value, st.Source = s.getenv(key), "env"
	default:
		st.Value, st.Source = def.Default, "default"
	}
	return st
}

// Lookup returns one setting with its effective value.
func (s *SettingsStore) Lookup(ctx context.Context, key string) (*docflow.Setting, error) {
	if _, ok := s.defs[key]; !ok {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Unknown setting: %s", key)
	}
	return s.effective(key), nil
}

// List returns every setting in catalogue order.
func (s *SettingsStore) List(ctx context.Context) ([]*docflow.Setting, error) {
	out := make([]*docflow.Setting, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, s.effective(k))
	}
	return out, nil
}

// Set stores a database value. EINVALID (a 422 from the settings API)
// when the service could not use it: the wrong type, refused by the
// setting's Check or, with the other settings, by a rule across settings
// (docflow.SettingRules), or a key read from the environment only
// (EnvOnly); the message names the setting, the value and why. ENOTFOUND
// for a key outside the catalogue.
func (s *SettingsStore) Set(ctx context.Context, key, value string) (*docflow.Setting, error) {
	set, failed, err := s.SetMany(ctx, map[string]string{key: value})
	if err != nil {
		return nil, err
	}
	if err := failed[key]; err != nil {
		return nil, err
	}
	return set[0], nil
}

// SetMany stores several database values in one transaction: those the
// service can use, each checked as Set checks one and the rules across
// settings checked with the other values of the batch in place (so
// AUTH_ENABLED and a long ADMIN_PASSWORD may arrive together). It returns
// the settings it stored, in catalogue order, and why each other key was
// refused (ENOTFOUND, EINVALID). err is a failure to store at all.
func (s *SettingsStore) SetMany(ctx context.Context, values map[string]string) ([]*docflow.Setting, map[string]error, error) {
	failed := map[string]error{}
	good := map[string]string{}
	for key, value := range values {
		def, ok := s.defs[key]
		switch {
		case !ok:
			failed[key] = docflow.Errorf(docflow.ENOTFOUND, "Unknown setting: %s", key)
		case s.isEnvOnly(key):
			failed[key] = docflow.Errorf(docflow.EINVALID, "%s is read from the environment before the database opens: set it in the environment of every process, not here", key)
		default:
			if err := docflow.ValidateSettingValue(&def, value); err != nil {
				failed[key] = err
			} else {
				good[key] = value
			}
		}
	}
	// A rule is checked with the batch in place; a key that breaks one
	// leaves the batch, and the rest is checked again without it.
	for again := true; again; {
		again = false
		with := func(k string) (string, string) {
			if v, ok := good[k]; ok {
				return v, "db"
			}
			return s.valueOf(k)
		}
		for _, key := range sortedKeys(good) {
			if err := docflow.CheckSettingRulesFor(key, good[key], "db", with); err != nil {
				failed[key] = err
				delete(good, key)
				again = true
				break
			}
		}
	}
	if len(good) == 0 {
		return nil, failed, nil
	}
	now := s.db.Now()
	stored := map[string]string{}
	for key, value := range good {
		stored[key] = value
		if s.defs[key].Sensitive {
			enc, err := s.cipher.Encrypt(value)
			if err != nil {
				return nil, nil, err
			}
			stored[key] = enc
		}
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		for _, key := range sortedKeys(good) {
			_, err := tx.Exec(ctx, `INSERT INTO settings (key, value, encrypted, updated_at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (key) DO UPDATE SET value=EXCLUDED.value, encrypted=EXCLUDED.encrypted, updated_at=EXCLUDED.updated_at`,
				key, stored[key], s.defs[key].Sensitive, now)
			if err != nil {
				return fmt.Errorf("set %s: %w", key, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	for key, value := range good {
		s.values[key] = value
		s.updated[key] = now
	}
	s.mu.Unlock()
	var out []*docflow.Setting
	for _, key := range s.order {
		if _, ok := good[key]; ok {
			out = append(out, s.effective(key))
		}
	}
	return out, failed, nil
}

func (s *SettingsStore) isEnvOnly(key string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.envOnly[key]
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Delete removes the database value; EINVALID when the value that then
// applies (environment or default) breaks a rule across settings.
func (s *SettingsStore) Delete(ctx context.Context, key string) error {
	def, ok := s.defs[key]
	if !ok {
		return docflow.Errorf(docflow.ENOTFOUND, "Unknown setting: %s", key)
	}
	// What applies once the database value is gone must pass the rules too.
	v, src := def.Default, "default"
	if e := s.getenv(key); e != "" {
		v, src = e, "env"
	}
	if err := docflow.CheckSettingRulesFor(key, v, src, s.valueOf); err != nil {
		return err
	}
	if _, err := s.db.Pool.Exec(ctx, `DELETE FROM settings WHERE key=$1`, key); err != nil {
		return fmt.Errorf("delete setting %s: %w", key, err)
	}
	s.mu.Lock()
	delete(s.values, key)
	delete(s.updated, key)
	s.mu.Unlock()
	return nil
}

// Validate checks the effective value of every setting (database, then
// environment, then default) and returns an error naming each one the
// service cannot use, with its value, its source and why, and each rule
// across settings that fails (docflow.SettingRules): a process refuses to
// start with it rather than fail later, obscurely.
func (s *SettingsStore) Validate() error {
	defs := make([]docflow.SettingDef, 0, len(s.order))
	for _, k := range s.order {
		defs = append(defs, s.defs[k])
	}
	return errors.Join(docflow.ValidateSettings(defs, s.valueOf), docflow.CheckSettingRules(s.valueOf))
}

// valueOf is key's effective value and its source (db, env, default).
func (s *SettingsStore) valueOf(key string) (string, string) {
	st := s.effective(key)
	return st.Value, st.Source
}

// Keys returns the catalogue keys, sorted (for tests and the settings page).
func (s *SettingsStore) Keys() []string {
	out := append([]string(nil), s.order...)
	sort.Strings(out)
	return out
}
