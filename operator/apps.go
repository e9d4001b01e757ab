package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/duix-exporter/duix_exporter/client"
)

type appsCheckOptions struct {
	output string // table or json
}

// appCheck is the outcome of checking one app; its JSON form is the
// output of `apps check --output json`.
type appCheck struct {
	App            string  `json:"app"`
	Up             bool    `json:"up"`
	InUse          *int64  `json:"in_use"`
	Limit          *int64  `json:"limit"`
	ActiveSessions *int    `json:"active_sessions"`
	LatencySeconds float64 `json:"latency_seconds"`
	ErrorReason    string  `json:"error_reason,omitempty"`
	Error          string  `json:"error,omitempty"`
}

// checkApp makes the calls a scrape makes for an app (concurrency and the
// session list, at once); the app is up when both succeed, as for duix_up.
func checkApp(ctx context.Context, name string, c *client.Client) appCheck {
	res := appCheck{App: name}
	start := time.Now()
	var (
		wg               sync.WaitGroup
		conc             *client.Concurrency
		concErr, sessErr error
		sessions         int
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		conc, concErr = c.Concurrency(ctx)
	}()
	go func() {
		defer wg.Done()
		sessErr = c.EachSession(ctx, client.SessionOptions{}, func(client.Session) error {
			sessions++
			return nil
		})
	}()
	wg.Wait()
	res.LatencySeconds = time.Since(start).Seconds()
	if concErr == nil && conc != nil {
		res.InUse, res.Limit = &conc.UserConcurrentNumber, &conc.TotalConcurrentNumber
	}
	if sessErr == nil {
		res.ActiveSessions = &sessions
	}
	res.Up = concErr == nil && sessErr == nil
	err := concErr
	if err == nil {
		err = sessErr
	}
	if err != nil {
		res.ErrorReason, res.Error = client.Reason(err), printable(err.Error(), 512)
	}
	return res
}

// runAppsCheck implements `apps check`.
func runAppsCheck(ctx context.Context, env *cli, o appsCheckOptions) int {
	cfg, pool, code := env.load()
	if code != exitOK {
		return code
	}
	defer pool.Close()
	if len(cfg.Apps) == 0 {
		return env.failf(exitUsage, "no apps in %s", env.configFile)
	}
	// Each app makes two calls at once: api.max_concurrency / 2 apps at a
	// time keep the calls in flight within api.max_concurrency.
	results := make([]appCheck, len(cfg.Apps))
	var g errgroup.Group
	g.SetLimit(max(cfg.API.MaxConcurrency/2, 1))
	for i, a := range cfg.Apps {
		g.Go(func() error {
			results[i] = checkApp(ctx, a.Name, pool.Client(a.Name))
			return nil
		})
	}
	_ = g.Wait()

	failed := 0
	for _, r := range results {
		if !r.Up {
			failed++
		}
	}
	if o.output == "json" {
		b, err := json.MarshalIndent(results, "", "  ") // no platform JSON in it: only its strings (see safeJSON)
		if err == nil {
			_, err = fmt.Fprintf(env.stdout, "%s\n", safeJSON(b))
		}
		if err != nil {
			return env.failf(exitFailed, "writing the output: %v", err)
		}
	} else {
		rows := [][]string{{"APP", "UP", "IN USE / LIMIT", "ACTIVE SESSIONS", "LATENCY", "ERROR"}}
		for _, r := range results {
			up, usage, sessions, errText := "1", "-", "-", ""
			if !r.Up {
				up = "0"
			}
			if r.InUse != nil {
				usage = fmt.Sprintf("%d / %d", *r.InUse, *r.Limit)
			}
			if r.ActiveSessions != nil {
				sessions = strconv.Itoa(*r.ActiveSessions)
			}
			if r.Error != "" {
				errText = r.Error
			}
			rows = append(rows, []string{r.App, up, usage, sessions, formatLatency(r.LatencySeconds), errText})
		}
		if err := writeTable(env.stdout, rows); err != nil {
			return env.failf(exitFailed, "writing the output: %v", err)
		}
	}
	if failed > 0 {
		fmt.Fprintf(env.stderr, "%s: %d of %d app(s) failed\n", env.name, failed, len(results))
		return exitFailed
	}
	return exitOK
}

// formatLatency prints a duration in milliseconds (seconds from 10 s on).
func formatLatency(secs float64) string {
	if secs >= 10 {
		return strconv.FormatFloat(secs, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(secs*1000, 'f', 1, 64) + "ms"
}
