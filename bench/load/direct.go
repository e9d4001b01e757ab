//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// direct makes the upstream calls of one scrape itself: getconcurrentNumber
// and getconcurrentList of every app, c at a time, with ready tokens and a
// plain http.Client, decoding each answer with encoding/json.
type direct struct {
	http     *http.Client
	reqs     []directRequest
	c        int
	sessions int // expected per app
}

type directRequest struct {
	url, auth string
	sessions  bool
}

type concurrency struct {
	CropID string `json:"cropId"`
	Total  int    `json:"totalConcurrentNumber"`
	User   int    `json:"userConcurrentNumber"`
}

type session struct {
	UUID           string `json:"uuid"`
	SessionID      string `json:"sessionId"`
	ConversationID string `json:"conversationId"`
	StartTime      int64  `json:"startTime"`
}

func newDirect(base string, o options) (*direct, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: o.concurrency, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	d := &direct{http: &http.Client{Transport: tr, Timeout: time.Minute}, c: o.concurrency, sessions: o.sessions}
	now := time.Now()
	for i := range o.apps {
		a := simulator.FleetApp(i, 0)
		tok, err := simulator.MintToken(a.AppID, a.AppKey, now, now.Add(2*time.Hour))
		if err != nil {
			return nil, err
		}
		q := "?appId=" + url.QueryEscape(a.AppID)
		d.reqs = append(d.reqs,
			directRequest{url: base + "/" + simulator.EndpointConcurrency + q, auth: "Bearer " + tok},
			directRequest{url: base + "/" + simulator.EndpointSessions + q, auth: "Bearer " + tok, sessions: true})
	}
	return d, nil
}

// round makes every call once and returns the wall time and the CPU time
// of this process.
func (d *direct) round(ctx context.Context) (time.Duration, float64, error) {
	cpu0, start := ownCPU(), time.Now()
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range min(d.c, len(d.reqs)) {
		g.Go(func() error {
			for i := next.Add(1) - 1; i < int64(len(d.reqs)); i = next.Add(1) - 1 {
				if err := d.call(ctx, d.reqs[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	return time.Since(start), ownCPU() - cpu0, err
}

func (d *direct) call(ctx context.Context, r directRequest) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", r.auth)
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("direct call: HTTP %d", resp.StatusCode)
	}
	var got int
	if r.sessions {
		got, err = decode(resp.Body, func(d []session) int { return len(d) })
	} else {
		got, err = decode(resp.Body, func(d concurrency) int { return d.User })
	}
	if err == nil && got != d.sessions {
		err = fmt.Errorf("direct call: %d sessions, want %d", got, d.sessions)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // so that the connection is reused
	return err
}

// decode decodes the platform's envelope with the data of an endpoint, and
// returns the number of sessions in it.
func decode[T any](r io.Reader, sessions func(T) int) (int, error) {
	var env struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Success bool   `json:"success"`
		Data    T      `json:"data"`
	}
	if err := json.NewDecoder(r).Decode(&env); err != nil {
		return 0, err
	}
	if !env.Success {
		return 0, errors.New("direct call: success false")
	}
	return sessions(env.Data), nil
}

// ownCPU is the user and system CPU time of this process, in seconds.
func ownCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // fails only on a bad argument
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
