// Package operator implements the commands an operator runs by hand or from
// a script (apps check, sessions list, sessions stop, conversation show):
// they read the exporter's configuration file and call the platform
// directly, each app through its own client.
package operator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
)

// Exit codes of the operator commands (apps, sessions, conversation).
const (
	exitOK       = 0 // done
	exitFailed   = 1 // a call to the platform failed (apps check: at least one app; sessions stop --older-than: at least one session)
	exitUsage    = 2 // bad arguments, unknown app, unreadable or invalid configuration
	exitNotFound = 3 // the session or conversation is unknown, or the session is no longer active
	exitDeclined = 4 // sessions stop was not confirmed: nothing was stopped
)

// Commands are the operator commands registered with a kingpin
// application.
type Commands struct {
	appsCheck, sessionsList, sessionsStop, conversationShow *kingpin.CmdClause

	check appsCheckOptions
	list  sessionsListOptions
	stop  sessionsStopOptions
	show  conversationShowOptions
}

// Register adds the operator commands to app.
func Register(app *kingpin.Application) *Commands {
	c := &Commands{}

	apps := app.Command("apps", "Operator commands about the configured apps.")
	c.appsCheck = apps.Command("check", "Call every configured app once and print a status table; exit 1 when any app failed.")
	c.appsCheck.Flag("output", "Output format: table or json.").Default("table").EnumVar(&c.check.output, "table", "json")

	sessions := app.Command("sessions", "Operator commands about an app's active sessions.")
	c.sessionsList = sessions.Command("list", "List the active sessions of an app.")
	c.sessionsList.Flag("app", "Name of a configured app.").Required().StringVar(&c.list.app)
	c.sessionsList.Flag("output", "Output format: table or json.").Default("table").EnumVar(&c.list.output, "table", "json")

	c.sessionsStop = sessions.Command("stop", "Close active sessions of an app, freeing their concurrency slots: one (--session), those older than a duration (--older-than) or all of them (--all).")
	c.sessionsStop.Flag("app", "Name of a configured app.").Required().StringVar(&c.stop.app)
	c.sessionsStop.Flag("session", "ID of the session to close (from sessions list).").IsSetByUser(&c.stop.sessionSet).StringVar(&c.stop.session)
	c.sessionsStop.Flag("older-than", "Close every session that started longer ago than this (90m, 2h, 1d), by the start time in the platform's records.").
		PlaceHolder("DURATION").IsSetByUser(&c.stop.olderThanSet).StringVar(&c.stop.olderThan)
	c.sessionsStop.Flag("all", "Close every session of the app at once (the platform's distroyCallSessionsByAppId).").BoolVar(&c.stop.all)
	c.sessionsStop.Flag("dry-run", "With --older-than or --all: show what would be closed, and close nothing.").BoolVar(&c.stop.dryRun)
	c.sessionsStop.Flag("yes", "Do not ask for confirmation (needed when stdin is not a terminal).").BoolVar(&c.stop.yes)

	conversation := app.Command("conversation", "Operator commands about conversations.")
	c.conversationShow = conversation.Command("show", "Show a conversation's configuration: persona, avatar, background, TTS, large models, scripts and maxConversation.")
	c.conversationShow.Flag("app", "Name of a configured app.").Required().StringVar(&c.show.app)
	c.conversationShow.Flag("id", "Conversation ID.").Required().StringVar(&c.show.id)
	c.conversationShow.Flag("output", "Output format: text or json.").Default("text").EnumVar(&c.show.output, "text", "json")
	return c
}

// Env is what an operator command works with.
type Env struct {
	Program    string // the binary's name; "Program command" prefixes messages
	UserAgent  string // sent with every call to the platform
	ConfigFile string
	Logger     log.Logger // diagnostics (nil: none)
	Stdin      *os.File   // answers to confirmation prompts
	Stdout     io.Writer
	Stderr     io.Writer
}

// Run runs the operator command cmd (a full command name from kingpin), if
// it is one, and returns its exit code; ok is false when cmd is not an
// operator command.
func (c *Commands) Run(ctx context.Context, cmd string, env Env) (code int, ok bool) {
	logger := env.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	out := &errWriter{w: env.Stdout}
	e := &cli{
		name:       env.Program + " " + cmd,
		userAgent:  env.UserAgent,
		configFile: env.ConfigFile,
		logger:     logger,
		stdin:      env.Stdin,
		stdout:     out,
		stderr:     env.Stderr,
	}
	switch cmd {
	case c.appsCheck.FullCommand():
		code = runAppsCheck(ctx, e, c.check)
	case c.sessionsList.FullCommand():
		code = runSessionsList(ctx, e, c.list)
	case c.sessionsStop.FullCommand():
		code = runSessionsStop(ctx, e, c.stop)
	case c.conversationShow.FullCommand():
		code = runConversationShow(ctx, e, c.show)
	default:
		return 0, false
	}
	if code == exitOK && out.err != nil { // a full disk, a closed pipe: what was asked for was not all printed
		code = e.failf(exitFailed, "writing the output: %v", out.err)
	}
	return code, true
}

// errWriter keeps the first error of its writes (and fails every write after it), for the exit code.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// cli is what an operator command works with: the configuration file, the
// standard streams and a logger for diagnostics.
type cli struct {
	name       string // "duix_exporter sessions stop", prefixes messages
	userAgent  string
	configFile string
	logger     log.Logger
	stdin      *os.File
	stdout     io.Writer
	stderr     io.Writer
}

// failf prints a diagnostic to stderr and returns code.
func (c *cli) failf(code int, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "%s: %s\n", c.name, fmt.Sprintf(format, args...))
	return code
}

// load reads the configuration and builds a client for every app. No
// request is made. On failure it prints why and returns a non-zero code.
func (c *cli) load() (*config.Config, *client.Pool, int) {
	cfg, err := config.Load(c.configFile)
	if err != nil {
		return nil, nil, c.failf(exitUsage, "cannot load the configuration: %v", err)
	}
	pool, err := client.NewPool(cfg, client.PoolOptions{UserAgent: c.userAgent})
	if err != nil {
		return nil, nil, c.failf(exitUsage, "cannot use the configuration %s: %v", c.configFile, err)
	}
	level.Debug(c.logger).Log("msg", "Loaded configuration", "file", c.configFile, "apps", len(cfg.Apps), "base_url", cfg.API.BaseURL)
	return cfg, pool, exitOK
}

// clientFor returns the client of the named app. An unknown name is a usage
// error whose message lists the configured names.
func (c *cli) clientFor(name string) (*client.Client, *client.Pool, int) {
	cfg, pool, code := c.load()
	if code != exitOK {
		return nil, nil, code
	}
	if cl := pool.Client(name); cl != nil {
		return cl, pool, exitOK
	}
	pool.Close()
	names := make([]string, len(cfg.Apps))
	for i, a := range cfg.Apps {
		names[i] = a.Name
	}
	known := "none"
	if len(names) > 0 {
		known = strings.Join(names, ", ")
	}
	return nil, nil, c.failf(exitUsage, "unknown app %q: the apps in %s are: %s", printable(name, 128), c.configFile, known)
}

// checkID validates an identifier given on the command line.
func checkID(flag, v string) error {
	switch {
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("--%s is empty", flag)
	case len(v) > 256:
		return fmt.Errorf("--%s is longer than 256 bytes", flag)
	case !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || disguising(r) }) >= 0:
		return fmt.Errorf("--%s %q contains spaces, control or format characters, or bytes that are not UTF-8", flag, printable(v, 64))
	}
	return nil
}

// describeError renders a client error for people as the exporter logs
// it: endpoint, app, reason, HTTP status and envelope code, never text of
// the platform's.
func describeError(err error) string {
	return printable(err.Error(), 512)
}

// disguising reports whether r changes how the text around it looks without showing itself: a format character (a
// bidirectional override, a zero-width one) or a line or paragraph separator.
func disguising(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }

// printable replaces control characters (a platform message could carry
// terminal escapes) and the disguising ones, and bounds the length.
func printable(s string, maxLen int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar || disguising(r) {
			return '?'
		}
		return r
	}, s)
	if len(s) > maxLen {
		cut := maxLen
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// writeTable prints rows as aligned columns separated by two spaces,
// without trailing blanks.
func writeTable(w io.Writer, rows [][]string) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if _, err := w.Write(append(bytes.TrimRight(line, " \n"), '\n')); err != nil {
			return err
		}
	}
	return nil
}
