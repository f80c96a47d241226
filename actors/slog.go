package actors

import (
	"context"
	"log/slog"
	"strings"

	"github.com/rs/zerolog"
)

// SlogHandler is a slog.Handler that writes to a zerolog.Logger, so that
// hollywood's logs (it only knows log/slog) land in docflow's log stream.
type SlogHandler struct {
	log    zerolog.Logger
	prefix string      // dotted group path for attribute keys
	attrs  []slog.Attr // from WithAttrs, keys already prefixed
}

var _ slog.Handler = (*SlogHandler)(nil)

// NewSlogHandler returns a handler writing to log; each record carries
// component=actor-engine.
func NewSlogHandler(log zerolog.Logger) *SlogHandler {
	return &SlogHandler{log: log.With().Str("component", "actor-engine").Logger()}
}

func zerologLevel(l slog.Level) zerolog.Level {
	switch {
	case l >= slog.LevelError:
		return zerolog.ErrorLevel
	case l >= slog.LevelWarn:
		return zerolog.WarnLevel
	case l >= slog.LevelInfo:
		return zerolog.InfoLevel
	default:
		return zerolog.DebugLevel
	}
}

// Enabled implements slog.Handler.
func (h *SlogHandler) Enabled(_ context.Context, l slog.Level) bool {
	zl := zerologLevel(l)
	return zl >= h.log.GetLevel() && zl >= zerolog.GlobalLevel()
}

// Handle implements slog.Handler.
func (h *SlogHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.WithLevel(zerologLevel(r.Level))
	if ev == nil {
		return nil
	}
	for _, a := range h.attrs {
		addAttr(ev, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		addAttr(ev, h.prefix, a)
		return true
	})
	ev.Msg(r.Message)
	return nil
}

// WithAttrs implements slog.Handler.
func (h *SlogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		a.Key = h.prefix + a.Key
		n.attrs = append(n.attrs, a)
	}
	return &n
}

// WithGroup implements slog.Handler.
func (h *SlogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.prefix = h.prefix + name + "."
	return &n
}

func addAttr(ev *zerolog.Event, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	key := prefix + a.Key
	switch a.Value.Kind() {
	case slog.KindGroup:
		p := key + "."
		if a.Key == "" {
			p = prefix
		}
		for _, g := range a.Value.Group() {
			addAttr(ev, p, g)
		}
	case slog.KindString:
		ev.Str(key, a.Value.String())
	case slog.KindInt64:
		ev.Int64(key, a.Value.Int64())
	case slog.KindUint64:
		ev.Uint64(key, a.Value.Uint64())
	case slog.KindFloat64:
		ev.Float64(key, a.Value.Float64())
	case slog.KindBool:
		ev.Bool(key, a.Value.Bool())
	case slog.KindDuration:
		ev.Dur(key, a.Value.Duration())
	case slog.KindTime:
		ev.Time(key, a.Value.Time())
	default:
		switch v := a.Value.Any().(type) {
		case error:
			ev.AnErr(key, v)
		case []byte:
			// hollywood passes stack traces as []byte
			ev.Str(key, strings.TrimSpace(string(v)))
		case interface{ String() string }:
			ev.Str(key, v.String())
		default:
			ev.Interface(key, v)
		}
	}
}
