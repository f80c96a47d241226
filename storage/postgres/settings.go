package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// SettingsStore implements docflow.SettingsStore: database values (kept
// in memory and refreshed periodically so several processes agree), then the
// environment, then the catalogue default.
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

	stop chan struct{}
	done chan struct{}
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
	s := &SettingsStore{db: db, cipher: c, getenv: getenv, log: log, defs: map[string]docflow.SettingDef{}}
	for _, d := range docflow.Catalogue() {
		s.defs[d.Key] = d
		s.order = append(s.order, d.Key)
	}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads every database value.
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
	s.values, s.updated = values, updated
	s.mu.Unlock()
	return nil
}

// Start refreshes the cached database values every interval until Close.
func (s *SettingsStore) Start(interval time.Duration) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := s.Reload(ctx); err != nil {
					s.log.Debug().Err(err).Msg("settings refresh")
				}
				cancel()
			}
		}
	}()
}

// Close stops the refresher.
func (s *SettingsStore) Close() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
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
// (docflow.SettingRules); the message names the setting, the value and why.
func (s *SettingsStore) Set(ctx context.Context, key, value string) (*docflow.Setting, error) {
	def, ok := s.defs[key]
	if !ok {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Unknown setting: %s", key)
	}
	if err := docflow.ValidateSettingValue(&def, value); err != nil {
		return nil, err
	}
	if err := docflow.CheckSettingRulesFor(key, value, "db", s.valueOf); err != nil {
		return nil, err
	}
	stored := value
	if def.Sensitive {
		enc, err := s.cipher.Encrypt(value)
		if err != nil {
			return nil, err
		}
		stored = enc
	}
	now := s.db.Now()
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO settings (key, value, encrypted, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key) DO UPDATE SET value=EXCLUDED.value, encrypted=EXCLUDED.encrypted, updated_at=EXCLUDED.updated_at`,
		key, stored, def.Sensitive, now)
	if err != nil {
		return nil, fmt.Errorf("set %s: %w", key, err)
	}
	s.mu.Lock()
	s.values[key] = value
	s.updated[key] = now
	s.mu.Unlock()
	return s.effective(key), nil
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
