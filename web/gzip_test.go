package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcceptsGzipFollowsTheQualities(t *testing.T) {
	for _, c := range []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZip"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"gzip, deflate, br"}, true},
		{[]string{"br", "gzip;q=0.5"}, true},
		{[]string{"*"}, true},
		{[]string{"identity"}, false},
		{[]string{"br, deflate"}, false},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0.5, identity"}, false},
		{[]string{"gzip, identity;q=0.5"}, true},
		{[]string{"gzip;q=1, identity;q=1"}, true},
		{[]string{"gzip;q=abc"}, false},
		{[]string{"gzip;q=2"}, false},
		{[]string{"gzip;q=-1"}, false},
		{[]string{"gzip;q=NaN"}, false},
		{[]string{",,;;gzip"}, false},
	} {
		h := http.Header{}
		for _, v := range c.header {
			h.Add("Accept-Encoding", v)
		}
		assert.Equal(t, c.want, acceptsGzip(h), "%q", c.header)
	}
}

// rawFetch sends method path with the headers given as name, value pairs,
// without the transparent decompression of net/http; it is safe to call
// from any goroutine.
func rawFetch(s *server, method, path string, header ...string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// rawGet is rawFetch of a GET that must succeed.
func rawGet(t *testing.T, s *server, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := rawFetch(s, http.MethodGet, path, header...)
	require.NoError(t, err)
	return resp, b
}

func TestScrapesAreGzippedOnlyWhenAccepted(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	for _, path := range []string{"/metrics", "/probe?app=museum-guide"} {
		resp, b := rawGet(t, s, path, "Accept-Encoding", "gzip")
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), path)
		assert.Contains(t, resp.Header.Values("Vary"), "Accept-Encoding", path)
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err, path)
		text, err := io.ReadAll(zr)
		require.NoError(t, err, "%s: a whole gzip stream", path)
		assert.Equal(t, 1.0, samples(t, string(text))["duix_up"]["app=museum-guide"], path)

		resp, b = rawGet(t, s, path, "Accept-Encoding", "gzip;q=0, identity")
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Empty(t, resp.Header.Get("Content-Encoding"), path)
		assert.Contains(t, resp.Header.Values("Vary"), "Accept-Encoding", path)
		assert.Equal(t, 1.0, samples(t, string(b))["duix_up"]["app=museum-guide"], path)
	}
}

func TestRefusedScrapesAreNotGzipped(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	for _, path := range []string{"/probe", "/probe?app=no-such-app"} {
		resp, b := rawGet(t, s, path, "Accept-Encoding", "gzip")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, path)
		assert.Empty(t, resp.Header.Get("Content-Encoding"), path)
		assert.Contains(t, string(b), "app", path)
	}
	resp, b := rawGet(t, s, "/metrics", "Accept-Encoding", "gzip", timeoutHeader, "0.05")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Content-Encoding"))
	assert.Contains(t, string(b), "scrape timeout too short")
}

// Simultaneous scrapes share the pool of gzip writers: each answer is a
// whole gzip stream of its own exposition.
func TestSimultaneousGzippedScrapesAreEachWhole(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	const n = 8
	type answer struct {
		body []byte
		err  error
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			_, b, err := rawFetch(s, http.MethodGet, "/metrics", "Accept-Encoding", "gzip")
			answers <- answer{b, err}
		}()
	}
	for range n {
		a := <-answers
		require.NoError(t, a.err)
		zr, err := gzip.NewReader(bytes.NewReader(a.body))
		require.NoError(t, err)
		text, err := io.ReadAll(zr)
		require.NoError(t, err)
		m := samples(t, string(text))
		for _, app := range []string{"support-desk", "sales-avatar", "museum-guide"} {
			assert.Equal(t, 1.0, m["duix_up"]["app="+app], app)
		}
	}
}

func TestHeadOfAGzippedScrapeHasNoBody(t *testing.T) {
	p := startPlatform(t)
	s := serve(t, p.config, Options{})
	resp, b, err := rawFetch(s, http.MethodHead, "/metrics", "Accept-Encoding", "gzip")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	assert.Empty(t, b)
}

// A writer put back is there for the next scrape even after garbage
// collections (a sync.Pool would have dropped it), up to the kept number;
// one more is left to the GC.
func TestGzipWritersAreKeptAcrossCollections(t *testing.T) {
	for len(gzipWriters) > 0 { // those of other tests
		<-gzipWriters
	}
	kept := make([]*gzip.Writer, cap(gzipWriters))
	for i := range kept {
		kept[i] = gzipWriter()
	}
	extra := gzipWriter()
	for _, gz := range append(kept, extra) {
		keepGzipWriter(gz)
	}
	runtime.GC()
	runtime.GC()
	for range kept {
		assert.True(t, slices.Contains(kept, gzipWriter()), "a kept writer (the same pointer)")
	}
	assert.False(t, slices.Contains(append(kept, extra), gzipWriter()), "none left: a new one")
}
