package janitor

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	toolkit "github.com/prometheus/exporter-toolkit/web"
)

// Timeouts of the janitor's listener. There is no write timeout: stopping
// sessions takes as long as the platform's answers (each bounded by
// api.timeout), and Alertmanager's own timeout ends a request it gave up.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	shutdownTimeout   = 5 * time.Second
)

// Serve serves the janitor on the addresses of flags, with TLS and basic
// auth from its web configuration file (exporter-toolkit, as the metrics
// listener), until ctx ends; then it shuts down within 5 seconds. It
// returns nil after a shutdown. logger gets the toolkit's records.
func (j *Janitor) Serve(ctx context.Context, flags *toolkit.FlagConfig, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           j,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelError)
	done := make(chan error, 1)
	go func() { done <- toolkit.ListenAndServe(srv, flags, logger) }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
