package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/duix-exporter/duix_exporter/client"
)

// parseAge reads the value of --older-than: a Go duration (90m, 1h30m,
// 1.5h) or a Prometheus one (2h, 1d, 1w). It must be positive.
func parseAge(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		md, merr := model.ParseDuration(v)
		if merr != nil {
			// The value is not repeated: it failed to parse.
			return 0, errors.New("--older-than is not a duration such as 90m, 2h or 1d")
		}
		d = time.Duration(md)
	}
	if d <= 0 {
		return 0, errors.New("--older-than must be longer than zero (to close every session, use --all)")
	}
	return d, nil
}

// runStopOlderThan implements `sessions stop --older-than`: it lists the
// app's sessions, keeps those whose record started before now minus age,
// asks once, and stops each with sessionStop.
func runStopOlderThan(ctx context.Context, env *cli, o sessionsStopOptions, age time.Duration) (code int) {
	c, pool, code := env.clientFor(o.app)
	if code != exitOK {
		return code
	}
	defer pool.Close()

	now := time.Now()
	cutoff := now.Add(-age)
	var old []client.Session
	var listed, undated, unnamed, mangled int
	seen := map[string]bool{}
	code = env.eachSession(ctx, c, o.app, func(s client.Session) {
		listed++
		switch {
		case s.ID == "":
			unnamed++
		case s.Start == nil:
			undated++
		case s.Start.Before(cutoff) && strings.ContainsRune(s.ID, utf8.RuneError): // bytes not UTF-8, or a lone surrogate,
			mangled++ // decoded as U+FFFD: not the platform's ID any more, and two such would look like one
		case s.Start.Before(cutoff) && !seen[s.ID]:
			seen[s.ID] = true
			old = append(old, s)
		}
	})
	if code != exitOK {
		return code
	}
	skipped := func() {
		if undated > 0 {
			fmt.Fprintf(env.stdout, "skipped %d session(s) whose record has no start time: they are not older than anything (sessions list shows them; stop one with --session)\n", undated)
		}
		if unnamed > 0 {
			fmt.Fprintf(env.stdout, "skipped %d session record(s) without a session ID: they cannot be stopped\n", unnamed)
		}
		if mangled > 0 {
			fmt.Fprintf(env.stdout, "skipped %d old session(s) whose ID is not valid UTF-8: it cannot be sent back as the platform has it (--all closes every session)\n", mangled)
		}
	}
	if mangled > 0 { // old sessions left: not done, whatever the others' outcome
		defer func() {
			code = cmp.Or(code, env.failf(exitFailed, "%d old session(s) of app %s were not stopped: their IDs are not valid UTF-8", mangled, o.app))
		}()
	}
	// o.olderThan parsed as a duration: it holds nothing to escape.
	if len(old) == 0 {
		fmt.Fprintf(env.stdout, "app %s has %d active session(s), none started more than %s ago: nothing to stop\n", o.app, listed, o.olderThan)
		skipped()
		return exitOK
	}
	fmt.Fprintf(env.stdout, "app %s has %d active session(s); %d started more than %s ago (before %s UTC):\n",
		o.app, listed, len(old), o.olderThan, cutoff.UTC().Format(time.DateTime))
	rows := [][]string{{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE"}}
	var werr error
	for i, s := range old { // in blocks, as sessions list: a long list needs no table of it whole
		rows = append(rows, []string{printable(s.ID, 128), orDash(printable(s.ConversationID, 128)),
			s.Start.UTC().Format(time.DateTime), now.Sub(*s.Start).Truncate(time.Second).String()})
		if len(rows) == tableBlock || i == len(old)-1 {
			werr = cmp.Or(werr, writeTable(env.stdout, rows))
			rows = rows[:0]
		}
	}
	skipped()
	if werr != nil { // the list not shown: nothing to confirm, nothing stopped
		return env.failf(exitFailed, "writing the output: %v; no session of app %s was stopped", werr, o.app)
	}

	if o.dryRun {
		fmt.Fprintf(env.stdout, "dry run: %d session(s) of app %s would be stopped; nothing was stopped\n", len(old), o.app)
		return exitOK
	}
	if !o.yes {
		if !isTerminal(env) {
			return env.failf(exitDeclined, "not stopping %d session(s) of app %s: stdin is not a terminal, so there is no one to confirm; pass --yes to stop them without asking", len(old), o.app)
		}
		if !confirm(ctx, env, fmt.Sprintf("Stop these %d session(s) of app %s? This ends their calls.", len(old), o.app)) {
			return env.failf(exitDeclined, "not confirmed: no session of app %s was stopped", o.app)
		}
	}

	var stopped, gone, failed int
	for i, s := range old {
		if ctx.Err() != nil {
			fmt.Fprintf(env.stdout, "app %s: %d stopped, %d already gone, %d failed; interrupted before the other %d\n",
				o.app, stopped, gone, failed, len(old)-i)
			return env.failf(exitFailed, "interrupted: %d of %d session(s) of app %s were not attempted", len(old)-i, len(old), o.app)
		}
		id := printable(s.ID, 128)
		_, err := c.StopSession(ctx, s.ID)
		switch {
		case err == nil:
			stopped++
			fmt.Fprintf(env.stdout, "session %s: stopped\n", id)
		case client.IsNotFound(err):
			gone++
			fmt.Fprintf(env.stdout, "session %s: already gone (%s)\n", id, describeError(err))
		default:
			failed++
			fmt.Fprintf(env.stdout, "session %s: failed: %s\n", id, describeError(err))
		}
	}
	fmt.Fprintf(env.stdout, "app %s: %d stopped, %d already gone, %d failed\n", o.app, stopped, gone, failed)
	if failed > 0 {
		return env.failf(exitFailed, "%d of %d session(s) of app %s could not be stopped", failed, len(old), o.app)
	}
	return exitOK
}

// runStopAll implements `sessions stop --all`: it lists the app's sessions
// to show how many there are, asks, and closes them all with one call of
// distroyCallSessionsByAppId. The platform is called even when it lists no
// session, since it may count sessions its list leaves out.
func runStopAll(ctx context.Context, env *cli, o sessionsStopOptions) int {
	c, pool, code := env.clientFor(o.app)
	if code != exitOK {
		return code
	}
	defer pool.Close()

	listed := 0
	var oldest *time.Time
	code = env.eachSession(ctx, c, o.app, func(s client.Session) {
		listed++
		if s.Start != nil && (oldest == nil || s.Start.Before(*oldest)) {
			oldest = s.Start
		}
	})
	if code != exitOK {
		return code
	}
	desc := fmt.Sprintf("app %s has %d active session(s)", o.app, listed)
	if oldest != nil {
		desc += fmt.Sprintf(", the oldest started %s UTC (%s ago)", oldest.UTC().Format(time.DateTime), time.Since(*oldest).Truncate(time.Second))
	}
	fmt.Fprintln(env.stdout, desc)

	if o.dryRun {
		fmt.Fprintf(env.stdout, "dry run: every session of app %s would be closed (%s); nothing was stopped\n", o.app, client.EndpointStopAll)
		return exitOK
	}
	if !o.yes {
		if !isTerminal(env) {
			return env.failf(exitDeclined, "not closing the sessions of app %s: stdin is not a terminal, so there is no one to confirm; pass --yes to close them without asking", o.app)
		}
		if !confirm(ctx, env, fmt.Sprintf("Close every session of app %s (%d listed)? This ends all its calls.", o.app, listed)) {
			return env.failf(exitDeclined, "not confirmed: no session of app %s was stopped", o.app)
		}
	}

	answered, err := c.StopAllSessions(ctx)
	if err != nil {
		return env.failf(exitFailed, "closing every session of app %s: %s", o.app, describeError(err))
	}
	// The answer's data is not printed: the platform does not document it, and it could hold what the platform was sent.
	fmt.Fprintf(env.stdout, "closed every session of app %s: the platform answered code %q\n", o.app, answered)
	return exitOK
}
