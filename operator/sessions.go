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
	"unicode/utf8"

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

// runSessionsList implements `sessions list`. The list is printed as it
// is decoded, a session at a time, so that a long one needs no more memory
// than a short one: a table in blocks of tableBlock rows (the other columns
// are at most tableFields fields of the first record), or JSON whose count
// comes last.
func runSessionsList(ctx context.Context, env *cli, o sessionsListOptions) int {
	c, pool, code := env.clientFor(o.app)
	if code != exitOK {
		return code
	}
	defer pool.Close()
	var (
		n, left int // sessions, fields of the first record left out
		keys    []string
		rows    [][]string
		now     = time.Now()
		w       = bufio.NewWriter(env.stdout)
	)
	defer w.Flush()
	err := c.EachSession(ctx, client.SessionOptions{KeepRaw: true}, func(s client.Session) error {
		n++
		if o.output == "json" {
			b, err := json.Marshal(s) // one line: platform JSON is never indented (see safeJSON)
			if err != nil {
				return err
			}
			b = safeJSON(b)
			if n == 1 {
				appName, _ := json.Marshal(o.app)
				fmt.Fprintf(w, "{\n  \"app\": %s,\n  \"sessions\": [\n    %s", appName, b)
			} else {
				fmt.Fprintf(w, ",\n    %s", b)
			}
			return w.Flush()
		}
		extra := otherFields(s)
		if n == 1 {
			for k := range extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) > tableFields {
				keys, left = keys[:tableFields], len(keys)-tableFields
			}
			rows = append(rows, []string{"SESSION ID", "CONVERSATION", "STARTED (UTC)", "AGE"})
			for _, k := range keys {
				rows[0] = append(rows[0], printable(k, 64))
			}
		}
		started, age := "-", "-"
		if s.Start != nil {
			started = s.Start.UTC().Format(time.DateTime)
			age = now.Sub(*s.Start).Truncate(time.Second).String()
		}
		row := []string{orDash(printable(s.ID, 128)), orDash(printable(s.ConversationID, 128)), started, age}
		for _, k := range keys {
			row = append(row, orDash(printable(jsonText(extra[k]), 128)))
		}
		if rows = append(rows, row); len(rows) < tableBlock {
			return nil
		}
		err := writeTable(w, rows)
		rows = rows[:0]
		return errors.Join(err, w.Flush())
	})
	if err != nil {
		w.Flush()
		return env.failf(exitFailed, "listing the sessions of app %s: %s", o.app, describeError(err))
	}
	switch {
	case o.output == "json" && n == 0:
		appName, _ := json.Marshal(o.app)
		fmt.Fprintf(w, "{\n  \"app\": %s,\n  \"sessions\": [],\n  \"count\": 0\n}\n", appName)
	case o.output == "json":
		fmt.Fprintf(w, "\n  ],\n  \"count\": %d\n}\n", n)
	case n == 0:
		fmt.Fprintf(w, "app %s has no active sessions\n", o.app)
	default:
		_ = writeTable(w, rows)
		fmt.Fprintf(w, "%d active session(s)\n", n)
		if left > 0 {
			fmt.Fprintf(w, "(%d more field(s) of the first record not shown: --output json shows the records whole)\n", left)
		}
	}
	return exitOK
}

const (
	// tableBlock is how many rows of a table are aligned together.
	tableBlock = 1000
	// tableFields is how many other fields of the records a table shows,
	// so that a row stays small whatever the records hold.
	tableFields = 8
)

// otherFields returns the fields of a session record other than those
// already shown as its ID, conversation and start.
func otherFields(s client.Session) map[string]json.RawMessage {
	var rec map[string]json.RawMessage
	if len(s.Raw) == 0 || json.Unmarshal(s.Raw, &rec) != nil {
		return nil
	}
	for k, v := range rec {
		switch text := jsonText(v); {
		case (k == "uuid" || k == "sessionId" || k == "id") && text == s.ID,
			k == "conversationId" && text == s.ConversationID,
			k == "startTime" && s.Start != nil:
			delete(rec, k)
		}
	}
	return rec
}

// jsonText renders a JSON value for a table cell: strings unquoted, other
// values as compact JSON ("" for none).
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
		if !confirm(ctx, env, fmt.Sprintf("Stop session %s of app %s? This ends the call.", o.session, o.app)) {
			return env.failf(exitDeclined, "not confirmed: session %s of app %s was not stopped", o.session, o.app)
		}
	}

	answered, err := c.StopSession(ctx, o.session)
	if err != nil {
		if client.IsNotFound(err) {
			return env.failf(exitNotFound, "session %s of app %s is unknown or no longer active: %s", o.session, o.app, describeError(err))
		}
		return env.failf(exitFailed, "stopping session %s of app %s: %s", o.session, o.app, describeError(err))
	}
	// The answer's data is not printed: the platform does not document it, and it could hold what the platform was sent.
	fmt.Fprintf(env.stdout, "stopped session %s of app %s: the platform answered code %q\n", o.session, o.app, answered)
	return exitOK
}

// describeSession prints what the platform's session list says about the
// session to stop, so that the person confirming sees what they end. It is
// best effort: a failure only prints a note.
func describeSession(ctx context.Context, env *cli, c *client.Client, o sessionsStopOptions) {
	n, desc := 0, ""
	err := c.EachSession(ctx, client.SessionOptions{}, func(s client.Session) error {
		n++
		if s.ID == o.session && desc == "" {
			desc = "conversation " + orDash(printable(s.ConversationID, 128))
			if s.Start != nil {
				desc += fmt.Sprintf(", started %s UTC (%s ago)", s.Start.UTC().Format(time.DateTime), time.Since(*s.Start).Truncate(time.Second))
			}
		}
		return nil
	})
	switch {
	case err != nil:
		fmt.Fprintf(env.stderr, "(cannot list the active sessions to describe it: %s)\n", describeError(err))
	case desc != "":
		fmt.Fprintf(env.stderr, "Session %s of app %s: %s.\n", o.session, o.app, desc)
	default:
		fmt.Fprintf(env.stderr, "Session %s is not in the %d active session(s) of app %s.\n", o.session, n, o.app)
	}
}

// isTerminal reports whether the command's stdin is a terminal, someone
// who can confirm.
func isTerminal(env *cli) bool {
	return env.stdin != nil && term.IsTerminal(int(env.stdin.Fd()))
}

// confirm asks question on stderr and reads the answer from stdin: only
// "y" or "yes" (any case) confirms. Ctrl-C (ctx ending) while it waits is
// no: the read of the terminal is left behind, not waited for.
func confirm(ctx context.Context, env *cli, question string) bool {
	fmt.Fprintf(env.stderr, "%s [y/N] ", question)
	type line struct {
		text string
		err  error
	}
	read := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(env.stdin).ReadString('\n')
		read <- line{strings.ToLower(strings.TrimSpace(s)), err}
	}()
	select {
	case l := <-read:
		if l.text == "y" || l.text == "yes" {
			return true
		}
		if l.err != nil {
			fmt.Fprintln(env.stderr)
		}
	case <-ctx.Done():
		fmt.Fprintln(env.stderr)
	}
	return false
}

// safeJSON makes JSON safe to print: invalid UTF-8 becomes U+FFFD, and C1 controls (U+0080 to U+009F, such as
// CSI), DEL and the disguising characters (a right-to-left override, say) are escaped as encoding/json escapes the C0 ones, so that a platform's text cannot drive a
// terminal. (Such bytes can only be in strings.) Platform JSON is printed as compact as it is: indenting it would
// make its output grow with the square of its nesting.
func safeJSON(b []byte) []byte {
	b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == 0x7f || r >= 0x80 && r <= 0x9f || disguising(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

func jsonCompact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

// eachSession streams the active sessions of app to fn (records not
// kept), or says why it cannot.
func (env *cli) eachSession(ctx context.Context, c *client.Client, app string, fn func(client.Session)) int {
	err := c.EachSession(ctx, client.SessionOptions{}, func(s client.Session) error { fn(s); return nil })
	if err != nil {
		return env.failf(exitFailed, "listing the sessions of app %s: %s", app, describeError(err))
	}
	return exitOK
}
