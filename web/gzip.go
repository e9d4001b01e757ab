package web

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
)

// gzipped serves next compressed with gzip at gzip.BestSpeed when the
// request accepts it, as Prometheus' scrapes do. promhttp compresses at the
// default level: at 1000 apps, the exposition alone (no call made) cost
// 43 ms of CPU per scrape with it and 37 ms with this, for an answer 5%
// larger (docs/performance.md). An error answer is not compressed.
func gzipped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		if !acceptsGzip(r.Header) {
			next.ServeHTTP(w, r)
			return
		}
		gz := gzipWriter()
		gz.Reset(w)
		defer func() {
			gz.Reset(nil) // holds no response once kept
			keepGzipWriter(gz)
		}()
		gw := &gzipResponse{ResponseWriter: w, gz: gz}
		next.ServeHTTP(gw, r)
		if gw.compressing {
			_ = gz.Close() // a failed write was already seen by the handler
		}
	})
}

// gzipWriters keeps writers for the next scrapes. A writer is about 1.1 MB,
// most of it zeroed at its making. A sync.Pool empties at the second
// garbage collection after a writer was put back, and a scrape of 1000
// apps sees two or three: half the scrapes of `make load` made a new one,
// 0.55 MB of the 19.4 MB the exporter allocated per scrape. One is kept
// until used; a second scrape under way at the same time makes its own,
// left to the GC: keeping two added about 1 MB to the live heap, at 5000
// apps near the peak RSS target (`make load-5000`, three alternating
// runs: 64.9, 63.0 and 62.9 MiB with two, 62.9, 62.7 and 63.5 with one).
var gzipWriters = make(chan *gzip.Writer, 1)

// gzipWriter returns a kept writer, or a new one.
func gzipWriter() *gzip.Writer {
	select {
	case gz := <-gzipWriters:
		return gz
	default:
		gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
		return gz
	}
}

// keepGzipWriter keeps gz for a later scrape, unless enough are kept.
func keepGzipWriter(gz *gzip.Writer) {
	select {
	case gzipWriters <- gz:
	default:
	}
}

// gzipResponse compresses what a handler writes, unless it answers with an
// error: an error page goes out as it is.
type gzipResponse struct {
	http.ResponseWriter
	gz          *gzip.Writer
	wrote       bool
	compressing bool
}

func (g *gzipResponse) WriteHeader(code int) {
	if !g.wrote {
		g.wrote = true
		if code == http.StatusOK && g.Header().Get("Content-Encoding") == "" {
			g.compressing = true
			g.Header().Set("Content-Encoding", "gzip")
			g.Header().Del("Content-Length")
		}
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipResponse) Write(b []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.compressing {
		return g.gz.Write(b)
	}
	return g.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (write
// deadlines).
func (g *gzipResponse) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// acceptsGzip reports whether Accept-Encoding names gzip (or *) with a
// quality above 0 that no identity entry beats.
func acceptsGzip(h http.Header) bool {
	gzipQ, identityQ := -1.0, -1.0
	for _, v := range h.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			if name, value, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(name), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil || f < 0 || f > 1 {
					continue
				}
				q = f
			}
			switch coding = strings.ToLower(strings.TrimSpace(coding)); coding {
			case "gzip", "x-gzip", "*":
				gzipQ = max(gzipQ, q)
			case "identity":
				identityQ = max(identityQ, q)
			}
		}
	}
	return gzipQ > 0 && gzipQ >= identityQ
}
