package logging

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// slogHandler writes slog records through a go-kit logger: ts (the
// record's time), caller (where the record was made), level, msg, then
// the attributes, groups flattened into dotted keys ("group.key").
type slogHandler struct {
	l      log.Logger // filtered by level, without ts and caller
	min    slog.Level
	prefix string // the open groups, each followed by a dot
	attrs  []any  // pairs from WithAttrs, already flattened
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	kv := make([]any, 0, 8+len(h.attrs)+2*r.NumAttrs())
	kv = append(kv,
		TimeKey, t.UTC().Format(time.RFC3339Nano),
		CallerKey, caller(r.PC),
		level.Key(), levelValue(r.Level),
		MsgKey, r.Message)
	kv = append(kv, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		kv = appendAttr(kv, h.prefix, a)
		return true
	})
	return h.l.Log(kv...)
}

func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.attrs = append([]any(nil), h.attrs...)
	for _, a := range as {
		c.attrs = appendAttr(c.attrs, h.prefix, a)
	}
	return &c
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

// appendAttr appends a's pairs to kv, following slog's rules: empty
// attributes and empty groups are left out, a group without a key is
// inlined.
func appendAttr(kv []any, prefix string, a slog.Attr) []any {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return kv
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			kv = appendAttr(kv, prefix, ga)
		}
		return kv
	}
	return append(kv, prefix+a.Key, a.Value.Any())
}

func levelValue(l slog.Level) level.Value {
	switch {
	case l < slog.LevelInfo:
		return level.DebugValue()
	case l < slog.LevelWarn:
		return level.InfoValue()
	case l < slog.LevelError:
		return level.WarnValue()
	}
	return level.ErrorValue()
}

// caller renders pc as go-kit's DefaultCaller does: file name and line.
func caller(pc uintptr) string {
	if pc == 0 {
		return "unknown"
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
}
