package app

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// envSettings resolves settings from the environment and the catalogue
// defaults: what the process knows before the database is open.
type envSettings struct {
	defs   map[string]docflow.SettingDef
	getenv func(string) string
}

func newEnvSettings(getenv func(string) string) *envSettings {
	e := &envSettings{defs: map[string]docflow.SettingDef{}, getenv: getenv}
	for _, d := range docflow.Catalogue() {
		e.defs[d.Key] = d
	}
	return e
}

func (e *envSettings) Get(key string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return e.defs[key].Default
}

// bootstrapSettings are read from the environment before the database
// (and the values stored in it) is open.
var bootstrapSettings = []string{docflow.LogLevel.Key(), docflow.LogFormat.Key(), docflow.Workdir.Key(), docflow.SessionSecret.Key(), docflow.DatabaseURL.Key()}

// envOnlySettings are the bootstrap settings a database value could never
// change (the database itself, where it keeps its files, the key of its
// sealed values, the log's format): the settings API refuses them. The log
// level (LOG_LEVEL, DEBUG) is read again once the database is open.
var envOnlySettings = []string{docflow.LogFormat.Key(), docflow.Workdir.Key(), docflow.SessionSecret.Key(), docflow.DatabaseURL.Key()}

// logLevel is LOG_LEVEL, or debug while DEBUG is on.
func logLevel(s docflow.SettingsReader) string {
	if docflow.Debug.Get(s) {
		return "debug"
	}
	return docflow.LogLevel.Get(s)
}

// validate checks the environment's (or the default) values of keys; see
// docflow.ValidateSettings.
func (e *envSettings) validate(keys ...string) error {
	defs := make([]docflow.SettingDef, 0, len(keys))
	for _, k := range keys {
		defs = append(defs, e.defs[k])
	}
	return docflow.ValidateSettings(defs, func(key string) (string, string) {
		if v := e.getenv(key); v != "" {
			return v, "env"
		}
		return e.defs[key].Default, "default"
	})
}

// Env resolves settings from getenv and the catalogue defaults: what a
// process knows before the database is open (DATABASE_URL, WORKDIR…).
func Env(getenv func(string) string) docflow.SettingsReader {
	return newEnvSettings(getenv)
}

// Logger builds the process's logger from LOG_LEVEL and LOG_FORMAT in
// getenv, writing to w.
func Logger(getenv func(string) string, w io.Writer) zerolog.Logger {
	env := newEnvSettings(getenv)
	return newLogger(logLevel(env), docflow.LogFormat.Get(env), w)
}

// ValidateEnv checks the values getenv (or the defaults) give keys, as the
// process does at start before the database is open; see
// docflow.ValidateSettings. For commands that read settings without Build.
func ValidateEnv(getenv func(string) string, keys ...string) error {
	return newEnvSettings(getenv).validate(keys...)
}

// newLogger builds the zerolog logger from LOG_LEVEL and LOG_FORMAT.
func newLogger(level, format string, w io.Writer) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	var out io.Writer = w
	if format != "json" {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger()
}

// sessionSecret returns SESSION_SECRET, or a secret generated once and kept
// in WORKDIR/.session_secret so sessions and encrypted settings survive a
// restart of a development setup.
func sessionSecret(configured, workdir string, log zerolog.Logger) (string, error) {
	if configured != "" {
		if len(configured) < 32 {
			return "", fmt.Errorf("SESSION_SECRET must be at least 32 characters (got %d)", len(configured))
		}
		return configured, nil
	}
	path := filepath.Join(workdir, ".session_secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 48)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	log.Warn().Str("file", path).Msg("SESSION_SECRET is not set: generated one and stored it; set SESSION_SECRET in production")
	return secret, nil
}

// splitList splits a comma-separated value.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
