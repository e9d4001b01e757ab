package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	toolkit "github.com/prometheus/exporter-toolkit/web"
)

// Bounds on what a client of the exporter's endpoints can hold or send.
// There is no read timeout and no server-wide write timeout: request bodies
// are never read (the server discards at most 256 KiB of one, then closes
// the connection), and a scrape's answer must be written by its own
// deadline (its scrape timeout, or DefaultScrapeTimeout, plus
// DefaultWriteMargin).
const (
	ReadHeaderTimeout = 10 * time.Second // a client that never finishes its headers is cut off
	IdleTimeout       = 2 * time.Minute  // an idle keep-alive connection is closed
	MaxHeaderBytes    = 64 << 10         // larger request headers get 431
	ShutdownTimeout   = 10 * time.Second // bounds a graceful shutdown
)

// NewServer returns the HTTP server of the exporter's endpoints; its own
// errors (a failed TLS handshake, say) go to errorLog.
func NewServer(h http.Handler, errorLog *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
	if errorLog != nil {
		srv.ErrorLog = slog.NewLogLogger(errorLog.Handler(), slog.LevelError)
	}
	return srv
}

// Serve serves srv on the addresses of flags, with TLS and basic auth from
// --web.config.file (exporter-toolkit), until ctx ends; then it shuts down
// gracefully within ShutdownTimeout. It returns nil after a shutdown.
func Serve(ctx context.Context, srv *http.Server, flags *toolkit.FlagConfig, logger log.Logger, slogger *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- toolkit.ListenAndServe(srv, flags, slogger) }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	level.Info(logger).Log("msg", "Shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		level.Warn(logger).Log("msg", "Graceful shutdown timed out", "err", err)
		_ = srv.Close()
	}
	return nil
}
