package janitor

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/duix-exporter/duix_exporter/web"
)

// readTimeout bounds reading a webhook request, body included. The server
// has no write timeout: stopping sessions takes as long as the platform's
// answers (each bounded by api.timeout), and Alertmanager's own timeout
// ends a request it gave up. writeTimeout bounds writing the answer, from
// when it is ready.
const (
	readTimeout  = 30 * time.Second
	writeTimeout = 10 * time.Second
)

// Server returns the HTTP server of the janitor's listener, for exporter-toolkit
// (which applies the web configuration: TLS, basic auth); its own errors go
// to errorLog.
func (j *Janitor) Server(errorLog *slog.Logger) *http.Server {
	srv := web.NewServer(j, errorLog)
	srv.ReadTimeout = readTimeout
	return srv
}
