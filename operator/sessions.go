package operator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/duix-exporter/duix_exporter/client"
)

type sessionsListOptions struct {
	app, output string
}

type sessionsStopOptions struct {
	app, session, olderThan  string
	sessionSet, olderThanSet bool // given on the command line, even empty
	all, dryRun, yes         bool
}

// sessionList is the output of `sessions list --output json`.
type sessionList struct {
	App      string           `json:"app"`
	Count    int              `json:"count"`
	Sessions []client.Session `json:"sessions"`
}

// runSessionsList implements `sessions list`.
func runSessionsList(ctx context.Context, env *cli, o sessionsListOptions) int {
	c, pool, code := env.clientFor(o.app)
	if code != exitOK {
		return code
	}
	defer pool.Close()
	sessions, code := env.sessions(ctx, c, o.app)
	if code != exitOK {
		return code
	}
	if sessions == nil {
		sessions = []client.Session{}
	}
	if o.output == "json" {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sessionList{App: o.app, Count: len(sessions), Sessions: sessions}); err != nil {
			return env.failf(exitFailed, "writing the output: %v", err)
		}
		return exitOK
	}
	if len(sessions) == 0 {
		fmt.Fprintf(env.stdout, "app %s has no active sessions\n", o.app)
		return exitOK
	}
	writeSessionTable(env, sessions, time.Now())
	return exitOK
}

// writeSessionTable prints one row per session: its ID, conversation,
// start, age, and a column for every other field of the records.
func writeSessionTable(env *cli, sessions []client.Session, now time.Time) {
	extras := make([]map[string]string, len(sessions))
	keySet := map[string]bool{}
	for i, s := range sessions {
		extras[i] = otherFields(s)
		for k := range extras[i] {
			keySet[k] = true
		}
	}
	keys := make([]string, 0, len(keySet))
	for k := range keySet {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	rows := [][]string{{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE"}}
	for _, k := range keys {
		rows[0] = append(rows[0], printable(k, 64))
	}
	for i, s := range sessions {
		started, age := "-", "-"
		if s.Start != nil {
			started = s.Start.UTC().Format(time.DateTime)
			age = now.Sub(*s.Start).Truncate(time.Second).String()
		}
		row := []string{orDash(printable(s.ID, 128)), orDash(printable(s.ConversationID, 128)), started, age}
		for _, k := range keys {
			row = append(row, orDash(extras[i][k]))
		}
		rows = append(rows, row)
	}
	_ = writeTable(env.stdout, rows)
	fmt.Fprintf(env.stdout, "%d active session(s)\n", len(sessions))
}

// otherFields returns the fields of a session record other than those
// already shown as its ID, conversation and start.
func otherFields(s client.Session) map[string]string {
	var rec map[string]json.RawMessage
	if len(s.Raw) == 0 || json.Unmarshal(s.Raw, &rec) != nil {
		return nil
	}
	out := make(map[string]string, len(rec))
	for k, v := range rec {
		text := jsonText(v)
		switch {
		case (k == "uuid" || k == "sessionId" || k == "id") && text == s.ID:
			continue
		case k == "conversationId" && text == s.ConversationID:
			continue
		case k == "startTime" && s.Start != nil:
			continue
		}
		out[k] = printable(text, 128)
	}
	return out
}

// jsonText renders a JSON value for a table cell: strings unquoted, other
// values as compact JSON.
func jsonText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return jsonCompact(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runSessionsStop implements `sessions stop`: one session (--session),
// those older than a duration (--older-than) or all of them (--all).
func runSessionsStop(ctx context.Context, env *cli, o sessionsStopOptions) int {
	var modes []string
	if o.sessionSet {
		modes = append(modes, "--session")
	}
	if o.olderThanSet {
		modes = append(modes, "--older-than")
	}
	if o.all {
		modes = append(modes, "--all")
	}
	if len(modes) != 1 {
		given := "none was given"
		if len(modes) > 1 {
			given = strings.Join(modes, " and ") + " were given"
		}
		return env.failf(exitUsage, "give exactly one of --session ID, --older-than DURATION or --all: %s", given)
	}
	switch {
	case o.olderThanSet:
		age, err := parseAge(o.olderThan)
		if err != nil {
			return env.failf(exitUsage, "%v", err)
		}
		return runStopOlderThan(ctx, env, o, age)
	case o.all:
		return runStopAll(ctx, env, o)
	}
	if o.dryRun {
		return env.failf(exitUsage, "--dry-run goes with --older-than or --all, not with --session")
	}
	if err := checkID("session", o.session); err != nil {
		return env.failf(exitUsage, "%v", err)
	}
	c, pool, code := env.clientFor(o.app)
	if code != exitOK {
		return code
	}
	defer pool.Close()

	if !o.yes {
		if !isTerminal(env) {
			return env.failf(exitDeclined, "not stopping session %s of app %s: stdin is not a terminal, so there is no one to confirm; pass --yes to stop it without asking", o.session, o.app)
		}
		describeSession(ctx, env, c, o)
		if !confirm(env, fmt.Sprintf("Stop session %s of app %s? This ends the call.", o.session, o.app)) {
			return env.failf(exitDeclined, "not confirmed: session %s of app %s was not stopped", o.session, o.app)
		}
	}

	res, err := c.StopSession(ctx, o.session)
	if err != nil {
		var apiErr *client.APIError
		if client.IsNotFound(err) && errors.As(err, &apiErr) {
			return env.failf(exitNotFound, "session %s of app %s is unknown or no longer active: the platform answered code %q: %s",
				o.session, o.app, apiErr.Code, printable(apiErr.Message, 256))
		}
		return env.failf(exitFailed, "stopping session %s of app %s: %s", o.session, o.app, describeError(err))
	}
	data := "null"
	if len(res.Data) > 0 {
		data = printable(jsonCompact(res.Data), 256)
	}
	fmt.Fprintf(env.stdout, "stopped session %s of app %s: the platform answered code %q, message %q, data %s\n",
		o.session, o.app, printable(res.Code, 64), printable(res.Message, 256), data)
	return exitOK
}

// describeSession prints what the platform's session list says about the
// session to stop, so that the person confirming sees what they end. It is
// best effort: a failure only prints a note.
func describeSession(ctx context.Context, env *cli, c *client.Client, o sessionsStopOptions) {
	sessions, err := c.Sessions(ctx)
	if err != nil {
		fmt.Fprintf(env.stderr, "(cannot list the active sessions to describe it: %s)\n", describeError(err))
		return
	}
	for _, s := range sessions {
		if s.ID != o.session {
			continue
		}
		desc := "conversation " + orDash(printable(s.ConversationID, 128))
		if s.Start != nil {
			desc += fmt.Sprintf(", started %s UTC (%s ago)", s.Start.UTC().Format(time.DateTime), time.Since(*s.Start).Truncate(time.Second))
		}
		fmt.Fprintf(env.stderr, "Session %s of app %s: %s.\n", o.session, o.app, desc)
		return
	}
	fmt.Fprintf(env.stderr, "Session %s is not in the %d active session(s) of app %s.\n", o.session, len(sessions), o.app)
}

// isTerminal reports whether the command's stdin is a terminal, someone
// who can confirm.
func isTerminal(env *cli) bool {
	return env.stdin != nil && term.IsTerminal(int(env.stdin.Fd()))
}

// confirm asks question on stderr and reads the answer from stdin: only
// "y" or "yes" (any case) confirms.
func confirm(env *cli, question string) bool {
	fmt.Fprintf(env.stderr, "%s [y/N] ", question)
	answer, err := bufio.NewReader(env.stdin).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	if answer == "y" || answer == "yes" {
		return true
	}
	if err != nil {
		fmt.Fprintln(env.stderr)
	}
	return false
}

func jsonCompact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

// sessions lists the active sessions of app, or says why it cannot.
func (env *cli) sessions(ctx context.Context, c *client.Client, app string) ([]client.Session, int) {
	sessions, err := c.Sessions(ctx)
	if err != nil {
		return nil, env.failf(exitFailed, "listing the sessions of app %s: %s", app, describeError(err))
	}
	return sessions, exitOK
}
