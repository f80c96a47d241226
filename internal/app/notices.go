package app

import (
	"context"
	"slices"
	"sync"
)

// notices are what an administrator should review about this process's
// configuration or data (an unsafe setting, what single-user mode left
// behind): each is logged as a warning when found, at every start, and
// listed to administrators on the home page (http.Config.AdminNotices).
type notices struct {
	mu   sync.Mutex
	list []string
}

// notice logs msg as a warning and keeps it for the home page.
func (m *App) notice(msg string) {
	m.Log.Warn().Msg(msg)
	m.notices.mu.Lock()
	defer m.notices.mu.Unlock()
	if !slices.Contains(m.notices.list, msg) {
		m.notices.list = append(m.notices.list, msg)
	}
}

// adminNotices is http.Config.AdminNotices.
func (m *App) adminNotices(context.Context) []string {
	m.notices.mu.Lock()
	defer m.notices.mu.Unlock()
	return slices.Clone(m.notices.list)
}
