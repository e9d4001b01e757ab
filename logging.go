package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	slgk "github.com/tjhop/slog-gokit"
)

// newLogger returns a go-kit logger writing logfmt or JSON to w, filtered at
// lvl, and the same logger as a *slog.Logger for exporter-toolkit.
func newLogger(w io.Writer, lvl, format string) (log.Logger, *slog.Logger, error) {
	var l log.Logger
	switch format {
	case "logfmt":
		l = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		l = log.NewJSONLogger(log.NewSyncWriter(w))
	default:
		return nil, nil, fmt.Errorf("unknown log format %q", format)
	}
	var (
		opt  level.Option
		slvl slog.Level
	)
	switch lvl {
	case "debug":
		opt, slvl = level.AllowDebug(), slog.LevelDebug
	case "info":
		opt, slvl = level.AllowInfo(), slog.LevelInfo
	case "warn":
		opt, slvl = level.AllowWarn(), slog.LevelWarn
	case "error":
		opt, slvl = level.AllowError(), slog.LevelError
	default:
		return nil, nil, fmt.Errorf("unknown log level %q", lvl)
	}
	l = level.NewFilter(l, opt)
	// The slog bridge adds its own time and caller.
	sl := slog.New(slgk.NewGoKitHandler(l, slvl))
	l = log.With(l, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller)
	return l, sl, nil
}
