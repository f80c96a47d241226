package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SettingsChannel is the NOTIFY channel of the settings table's trigger
// (migration 0720): the payload is the changed key, or '*' after a
// TRUNCATE.
const SettingsChannel = "docflow_settings"

// Start keeps the cached database values current until Close: a listener
// on its own connection LISTENs on SettingsChannel and reloads the values
// at every notification, so a change made by any process (or by hand in
// psql) applies in every process at its commit, without reading the table
// on every request. After a lost connection it listens again and reloads
// once: a change committed while nobody listened is not missed.
func (s *SettingsStore) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			err := s.listen(ctx)
			if ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Msg("settings listener disconnected; reconnecting")
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}()
}

// Listening is closed once the listener listens (for tests and start-up
// checks: a change committed after it is seen).
func (s *SettingsStore) Listening() <-chan struct{} { return s.listening }

// listen listens on its own connection (a pooled one would be given back
// with LISTEN still on), reloads, and then reloads at every notification
// until ctx ends or the connection is lost.
func (s *SettingsStore) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+SettingsChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Changes committed while nobody listened.
	if err := s.reload(ctx); err != nil {
		return err
	}
	s.markListening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		s.log.Debug().Str("key", n.Payload).Msg("setting changed; reloading")
		if err := s.reload(ctx); err != nil {
			return err
		}
	}
}

func (s *SettingsStore) reload(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return s.Reload(rctx)
}

func (s *SettingsStore) markListening() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.listening:
	default:
		close(s.listening)
	}
}

// Close stops the listener.
func (s *SettingsStore) Close() {
	if s.stop != nil {
		s.stop()
		<-s.done
		s.stop = nil
	}
}
