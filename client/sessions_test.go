package client_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

func decodeList(t *testing.T, data string) ([]client.Session, error) {
	t.Helper()
	var got []client.Session
	err := client.DecodeSessionList(json.NewDecoder(strings.NewReader(data)), client.SessionOptions{}, func(s client.Session) error {
		got = append(got, s)
		return nil
	})
	return got, err
}

func TestDecodeSessionListRecords(t *testing.T) {
	start := time.UnixMilli(1700000000000)
	at := func(ms int64) *time.Time { t := time.UnixMilli(ms); return &t }
	for _, tc := range []struct {
		record string
		want   client.Session
	}{
		{`{}`, client.Session{}},
		{`{"uuid":"u-1","sessionId":"s-1","conversationId":"108","appId":"a","startTime":1700000000000,"status":"in_call"}`,
			client.Session{ID: "u-1", ConversationID: "108", Start: &start}},
		{`{"UUID":"upper","ConversationID":"c","STARTTIME":"1700000000001"}`, client.Session{ID: "upper", ConversationID: "c", Start: at(1700000000001)}},
		{`{"uuid":"first","uuid":"second"}`, client.Session{ID: "second"}},
		{`{"uuid":"","sessionId":null,"id":42}`, client.Session{ID: "42"}},
		{`{"sessionId":"s-only","id":"later"}`, client.Session{ID: "s-only"}},
		{`{"id":-7,"startTime":-5}`, client.Session{ID: "-7"}},
		{`{"id":"x","startTime":1.7e12}`, client.Session{ID: "x"}},
		{`{"id":"seconds","startTime":1700000000}`, client.Session{ID: "seconds"}}, // 1970 as milliseconds: no start
		{`{"id":"1999","startTime":946684799999}`, client.Session{ID: "1999"}},
		{`{"id":"2000","startTime":946684800000}`, client.Session{ID: "2000", Start: at(946684800000)}},
		{`{"id":"x","startTime":true}`, client.Session{ID: "x"}},
		{`{"id":"x","startTime":{"ms":1}}`, client.Session{ID: "x"}},
		{`{"u\u0075id":"escaped key","conversation\u0049d":"c9"}`, client.Session{ID: "escaped key", ConversationID: "c9"}},
		{`{"ſessionId":"long s folds onto s"}`, client.Session{ID: "long s folds onto s"}},
		{`{"uuid":"caf\u00e9","conversationId":"\u4e2d\u6587"}`, client.Session{ID: "café", ConversationID: "中文"}},
		{`{"nested":{"uuid":"not me","list":[1,{"x":"}]"},"]"]},"uuid":"me"}`, client.Session{ID: "me"}},
		{`{"conversationId":108,"uuid":["arr"],"sessionId":"s"}`, client.Session{ID: "s", ConversationID: "108"}},
		{`"bare-id"`, client.Session{ID: "bare-id"}},
		// Bytes that are not UTF-8, or a lone surrogate: U+FFFD, as encoding/json decodes them, never the raw bytes.
		{"{\"uuid\":\"a\xffb\",\"conversationId\":\"c\xfe\"}", client.Session{ID: "a\ufffdb", ConversationID: "c\ufffd"}},
		{`{"uuid":"a\ud800b"}`, client.Session{ID: "a\ufffdb"}},
	} {
		t.Run(tc.record, func(t *testing.T) {
			got, err := decodeList(t, "["+tc.record+"]")
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0])
		})
	}
}

func TestDecodeSessionListShapes(t *testing.T) {
	for data, want := range map[string]int{
		`null`:               0,
		`[]`:                 0,
		`[{"uuid":"a"},"b"]`: 2,
		`{"total":2,"list":[{"uuid":"a"},{"uuid":"b"}]}`:                               2,
		`{"page":{"n":1},"records":[{"uuid":"a"}],"rows":[{"uuid":"x"},{"uuid":"y"}]}`: 1,
		`{"total":0}`: 0,
	} {
		got, err := decodeList(t, data)
		require.NoError(t, err, data)
		assert.Len(t, got, want, data)
	}
	for _, data := range []string{`"x"`, `12`, `true`, `[1]`, `[null]`, `[["a"]]`, `[{"uuid":"a"}`, `{"list":[{"uuid":}]}`} {
		_, err := decodeList(t, data)
		assert.Error(t, err, data)
	}
}

func TestDecodeSessionListKeepsRawOnlyWhenAsked(t *testing.T) {
	const rec = `{"uuid":"a", "extra":[1,2,{"deep":true}]}`
	var kept, dropped client.Session
	require.NoError(t, client.DecodeSessionList(json.NewDecoder(strings.NewReader("["+rec+"]")), client.SessionOptions{KeepRaw: true},
		func(s client.Session) error { kept = s; return nil }))
	require.NoError(t, client.DecodeSessionList(json.NewDecoder(strings.NewReader("["+rec+"]")), client.SessionOptions{},
		func(s client.Session) error { dropped = s; return nil }))
	assert.Equal(t, rec, string(kept.Raw))
	assert.Nil(t, dropped.Raw)
	assert.Equal(t, "a", dropped.ID)
}

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

// clientFor returns a client of the app at base, accepting answers of up
// to maxBytes.
func clientFor(tb testing.TB, base string, maxBytes int64) *client.Client {
	tb.Helper()
	cfg := &config.Config{API: config.DefaultAPI, Apps: []config.App{{Name: "a", AppID: appID, AppKey: appKey}}}
	cfg.API.BaseURL, cfg.API.MaxResponseBytes = base+simulator.BasePath, maxBytes
	p, err := client.NewPool(cfg, client.PoolOptions{})
	require.NoError(tb, err)
	tb.Cleanup(p.Close)
	return p.Client("a")
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

// BenchmarkSessionListDecoding counts session lists of 10, 10 000 and
// 100 000 entries through the real client (envelope, streaming decoder,
// callback), the simulator's answer replayed from memory on loopback.
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
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(rec.Body.Bytes()) }))
			b.Cleanup(srv.Close)
			c := clientFor(b, srv.URL, 1<<30)

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

// TestCountingALongSessionListKeepsTheHeapFlat counts a 20 000-entry list
// (about 3.6 MB of JSON) through the real client against the simulator on
// loopback, and checks that the live heap never grows by 1 MiB: the list is
// streamed, never held. The live heap is measured after a collection every
// 2 000 entries and at the end, against the heap before the call; the
// simulator's own copy of the list and the connection exist before.
func TestCountingALongSessionListKeepsTheHeapFlat(t *testing.T) {
	const n = 20_000
	srv := httptest.NewServer(sessionList(t, n))
	t.Cleanup(srv.Close)
	c := clientFor(t, srv.URL, 1<<30)
	got, err := countSessions(c, func(int) {}) // the simulator's snapshot of the list, the connection
	require.NoError(t, err)
	require.Equal(t, n, got)

	var ms runtime.MemStats
	live := func() int64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := live()
	var growth int64
	got, err = countSessions(c, func(seen int) {
		if seen%2_000 == 0 {
			growth = max(growth, live()-before)
		}
	})
	growth = max(growth, live()-before)
	require.NoError(t, err)
	require.Equal(t, n, got)
	t.Logf("live heap growth while counting %d sessions: %d bytes", n, growth)
	assert.Less(t, growth, int64(1<<20), "the list is streamed, never held")
}

// endless answers an endless JSON document whose start is prefix, then
// fill repeated.
func endless(prefix, fill string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, prefix)
		chunk := bytes.Repeat([]byte(fill), 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
}

// The memory a call holds is bounded by max_response_bytes: for the answers
// that make a call hold the most, one long value, which encoding/json
// buffers whole, endless or decoded, decoding allocates at most
// config.DecodeFactor times max_response_bytes (the sizing rule of
// config.API.MemoryNeeded); every allocation is counted, garbage included,
// so the figure bounds their peak from above. (Answers of many tiny values
// allocate more in all, but hold little at once: docs/reliability.md.)
func TestACallAllocatesAtMostDecodeFactorTimesMaxResponseBytes(t *testing.T) {
	const limit = 2 << 20
	for _, tc := range []struct{ name, prefix, suffix, fill string }{
		{"message", `{"success":true,"message":"`, "", ""},
		{"other member", `{"success":true,"extra":["`, "", ""},
		{"concurrency", `{"success":true,"data":{"cropId":"`, "", ""},
		{"conversation", `{"success":true,"data":{"id":"1","conversationName":"`, "", ""},
		{"session", `{"success":true,"data":[{"uuid":"`, "", ""},
		{"session list", `{"success":true,"data":{"list":[{"other":"`, "", ""},
		{"whole conversation", `{"success":true,"data":{"id":"1","conversationName":"`, `"}}`, ""},
		{"whole session", `{"success":true,"data":[{"uuid":"`, `"}]}`, ""},
		{"whole session by ID", `{"success":true,"data":["`, `"]}`, ""},
		{"nested other member", `{"success":true,"extra":`, "", "["},
		{"nested session list member", `{"success":true,"data":{"other":`, "", "{\"a\":"},
		{"nested conversation", `{"success":true,"data":{"id":"1","other":`, "", "["},
		{"nested session", `{"success":true,"data":[`, "", "["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := endless(tc.prefix, cmp.Or(tc.fill, "x"))
			if tc.suffix != "" {
				body := tc.prefix + strings.Repeat("x", limit-len(tc.prefix)-len(tc.suffix)) + tc.suffix
				h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) })
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			c := clientFor(t, srv.URL, limit)
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			var err error
			switch {
			case strings.Contains(tc.name, "session"):
				_, err = allSessions(c)
			case strings.Contains(tc.name, "conversation"):
				_, err = client.GetConversation[struct{}](context.Background(), c, "1")
			default:
				_, err = c.Concurrency(context.Background())
			}
			runtime.ReadMemStats(&ms)
			allocated := ms.TotalAlloc - before
			if tc.fill != "" { // refused at a depth encoding/json would refuse too, or at the cap
				assert.Equal(t, client.ReasonDecode, client.Reason(err))
			} else if tc.suffix == "" {
				assert.ErrorIs(t, err, client.ErrBodyTooLarge)
				assert.Equal(t, client.ReasonDecode, client.Reason(err))
			} else {
				assert.NoError(t, err, "an answer of max_response_bytes is read")
			}
			t.Logf("%s: %.2f x max_response_bytes allocated", tc.name, float64(allocated)/limit)
			assert.LessOrEqual(t, allocated, uint64(config.DecodeFactor*limit))
		})
	}
}

// max_response_bytes is exact: an answer of that many bytes is read, one
// more byte is refused, and one whose Content-Length is larger is refused
// before its body is read (here a body that never comes).
func TestMaxResponseBytesIsExact(t *testing.T) {
	const limit = 1024
	ok := `{"code":"200","data":{"cropId":"c","totalConcurrentNumber":5,"userConcurrentNumber":1},"success":true}`
	for size, want := range map[int]error{limit: nil, limit + 1: client.ErrBodyTooLarge} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.NewResponseController(w).Flush() // chunked: no Content-Length to go by
			_, _ = io.WriteString(w, ok+strings.Repeat(" ", size-len(ok)))
		}))
		t.Cleanup(srv.Close)
		_, err := clientFor(t, srv.URL, limit).Concurrency(context.Background())
		if want == nil {
			assert.NoError(t, err, size)
		} else {
			assert.ErrorIs(t, err, want, size)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(limit+1))
		_, _ = io.WriteString(w, ok[:20])
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	_, err := clientFor(t, srv.URL, limit).Concurrency(context.Background())
	assert.ErrorIs(t, err, client.ErrBodyTooLarge, "refused unread, not timed out")
	// Only a 2xx answer is read: a 300 with a good envelope is an HTTP error.
	srv300 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusMultipleChoices)
		_, _ = io.WriteString(w, ok)
	}))
	t.Cleanup(srv300.Close)
	_, err = clientFor(t, srv300.URL, limit).Concurrency(context.Background())
	assert.Equal(t, client.ReasonHTTP, client.Reason(err))
}
