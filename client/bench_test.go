package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// sessionList returns a simulator whose app has n active sessions spread
// over 7 conversations.
func sessionList(tb testing.TB, n int) *simulator.Simulator {
	tb.Helper()
	sim := simulator.New()
	sim.AddApp(simulator.App{ID: appID, Key: appKey, CorpID: "corp-7", Allowance: n})
	for i := range n {
		_, err := sim.StartSession(appID, fmt.Sprintf("10%d", i%7))
		require.NoError(tb, err)
	}
	return sim
}

// clientFor returns a client of the app at base through hc, accepting
// bodies of any size.
func clientFor(tb testing.TB, base string, hc *http.Client) *client.Client {
	tb.Helper()
	u, err := url.Parse(base + simulator.BasePath)
	require.NoError(tb, err)
	t := &client.Transport{HTTP: hc, BaseURL: u, Timeout: time.Minute, MaxResponseBytes: 1 << 30}
	return client.New(t, appID, client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil))
}

func countSessions(c *client.Client, each func(seen int)) (int, error) {
	seen := 0
	err := c.EachSession(context.Background(), client.SessionOptions{}, func(client.Session) error {
		seen++
		each(seen)
		return nil
	})
	return seen, err
}

// replay answers every request with the same recorded response.
type replay struct {
	header http.Header
	body   []byte
}

func (r *replay) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body)), ContentLength: int64(len(r.body)), Request: req,
	}, nil
}

// BenchmarkSessionListDecoding counts session lists of 10, 10 000 and
// 100 000 entries through the real client (envelope, streaming decoder,
// callback), decoding the simulator's bytes replayed from memory so that
// only decoding is measured.
func BenchmarkSessionListDecoding(b *testing.B) {
	for _, n := range []int{10, 10_000, 100_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			sim := sessionList(b, n)
			tok, err := simulator.MintToken(appID, appKey, time.Now(), time.Now().Add(time.Hour))
			require.NoError(b, err)
			req := httptest.NewRequest(http.MethodGet, simulator.BasePath+"/"+simulator.EndpointSessions+"?appId="+appID, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, req)
			require.Equal(b, http.StatusOK, rec.Code)
			c := clientFor(b, "http://platform.invalid", &http.Client{Transport: &replay{header: rec.Header(), body: rec.Body.Bytes()}})

			b.SetBytes(int64(rec.Body.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if got, err := countSessions(c, func(int) {}); err != nil || got != n {
					b.Fatalf("counted %d of %d: %v", got, n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}

// TestCountingALongSessionListKeepsTheHeapFlat counts a 100 000-entry list
// (about 18 MB of JSON) through the real client against the simulator on
// loopback, and checks that the live heap never grows by 1 MiB: the list is
// streamed, never held. The live heap is measured after a collection every
// 10 000 entries and at the end, against the heap before the call; the
// simulator's own copy of the list and the connection exist before.
func TestCountingALongSessionListKeepsTheHeapFlat(t *testing.T) {
	const n = 100_000
	srv := httptest.NewServer(sessionList(t, n))
	t.Cleanup(srv.Close)
	c := clientFor(t, srv.URL, srv.Client())
	got, err := countSessions(c, func(int) {}) // the simulator's snapshot of the list, the connection
	require.NoError(t, err)
	require.Equal(t, n, got)

	var ms runtime.MemStats
	live := func() int64 {
		runtime.GC()
		runtime.GC() // a second time, to free what sync.Pools held too
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := live()
	var growth int64
	got, err = countSessions(c, func(seen int) {
		if seen%10_000 == 0 {
			growth = max(growth, live()-before)
		}
	})
	growth = max(growth, live()-before)
	require.NoError(t, err)
	require.Equal(t, n, got)
	t.Logf("live heap growth while counting %d sessions: %d bytes", n, growth)
	assert.Less(t, growth, int64(1<<20), "the list is streamed, never held")
}
