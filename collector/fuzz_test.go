package collector_test

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
)

// Whatever the platform answers to getconcurrentNumber, getconcurrentList and getConversationById (any body, any of
// a few statuses), two scrapes of an app with two conversations and the lifecycle on gather without error from a
// pedantic registry; the app's series are bounded by the configuration, never by what the platform lists; every label
// value is valid UTF-8 of at most 256 bytes, and those the configuration gives (app, conversation_id, reason) are its.
func FuzzAppAnswers(f *testing.F) {
	const list = `{"code":"0000","success":true,"data":[{"uuid":"s1","conversationId":"c1","startTime":1700000000000},` +
		`{"sessionId":"s2","conversationId":"c2"},"s3",{"id":"s3"},{"uuid":"s4","conversationId":"other"}]}`
	for _, seed := range [][3]string{
		{`{"code":"0000","success":true,"data":{"cropId":"corp","totalConcurrentNumber":5,"userConcurrentNumber":2}}`, list,
			`{"code":"0000","success":true,"data":{"conversationName":"n","language":"en","maxConversation":3,"detailDto":{"modelName":"m","ttsName":"t"}}}`},
		{`{"success":true,"data":{"cropId":"` + strings.Repeat("\u00e9", 300) + `\ud800","totalConcurrentNumber":1,"userConcurrentNumber":0}}`,
			`{"success":true,"data":{"list":[` + strings.Repeat(`{"uuid":"`+strings.Repeat("x", 300)+`"},`, 3) + `null]}}`,
			`{"success":true,"data":{"conversationName":"\u0000\u202e` + strings.Repeat("n", 300) + `","maxConversation":7}}`},
		{`{"success":true,"data":{"totalConcurrentNumber":-1,"userConcurrentNumber":1e400}}`, `{"success":true,"data":{"rows":{}}}`,
			`{"success":true,"data":{"maxConversation":"7"}}`},
		{`{"code":"401","success":false,"message":"KEY"}`, `{"code":"E\u001b[31m","success":false}`, `<html>502</html>`},
		{`{"success":true,"data":null}`, `{"success":true,"data":[],"data":[]}`, `{"success":true,"data":{"maxConversation":null}}`},
	} {
		f.Add(seed[0], seed[1], seed[2], uint8(0))
	}
	f.Add("", "", "", uint8(1))
	f.Add("{}", "[]", "null", uint8(2))
	var answers atomic.Pointer[[3]string]
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers.Load()
		body := a[0]
		if strings.HasSuffix(r.URL.Path, "/"+client.EndpointSessions) {
			body = a[1]
		} else if strings.HasSuffix(r.URL.Path, "/"+client.EndpointConversation) {
			body = a[2]
		}
		w.WriteHeader(int(status.Load()))
		_, _ = io.WriteString(w, body)
	}))
	srv.Config.SetKeepAlivesEnabled(false) // an exporter per input: no idle connection is left behind
	f.Cleanup(srv.Close)
	cfg := &config.Config{API: config.DefaultAPI, Sessions: config.Sessions{Lifecycle: true, MaxTracked: 3}}
	cfg.API.BaseURL, cfg.API.Timeout, cfg.API.MaxResponseBytes = srv.URL, model.Duration(10*time.Second), 64<<10
	cfg.Apps = []config.App{{Name: "a", AppID: "1", AppKey: "KEY-of-the-app", TokenTTL: config.DefaultTokenTTL, Conversations: []string{"c1", "c2"}}}
	reasons := []string{client.ReasonTimeout, client.ReasonHTTP, client.ReasonAPI, client.ReasonDecode, client.ReasonAuth, client.ReasonNetwork, client.ReasonRateLimited}
	f.Fuzz(func(t *testing.T, concurrency, sessions, conversation string, code uint8) {
		answers.Store(&[3]string{concurrency, sessions, conversation})
		status.Store(int32([]int{200, 200, 500, 401, 429}[int(code)%5]))
		exp := collector.New(collector.Options{})
		if !assert.NoError(t, exp.Apply(cfg)) {
			return
		}
		for range 2 {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(exp.Collector(context.Background()))
			mfs, err := reg.Gather()
			assert.NoError(t, err)
			n := 0
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					n++
					if h := m.GetHistogram(); h != nil {
						n += len(h.GetBucket()) + 2 // and +Inf, sum and count
					}
					for _, v := range []float64{m.GetGauge().GetValue(), m.GetCounter().GetValue(), m.GetHistogram().GetSampleSum()} {
						assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s: %v", mf.GetName(), v)
					}
					for _, l := range m.GetLabel() {
						v := l.GetValue()
						assert.True(t, utf8.ValidString(v) && len(v) <= 256, "%s{%s}: %q", mf.GetName(), l.GetName(), v)
						switch l.GetName() {
						case "app":
							assert.Equal(t, "a", v)
						case "conversation_id":
							assert.Contains(t, []string{"c1", "c2"}, v)
						case "reason":
							assert.True(t, slices.Contains(reasons, v), v)
						}
					}
				}
			}
			// 8 of a healthy app, 4 per conversation, 16 of the lifecycle; a series per reason of failure, and the
			// rate limit's while it applies.
			assert.LessOrEqual(t, n, 8+2*4+16+len(reasons)+1)
		}
		assert.NoError(t, exp.Apply(cfg)) // closes the pool's connections (none kept alive)
	})
}
