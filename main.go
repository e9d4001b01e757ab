// Command duix_exporter exports the concurrency, sessions and conversation limits of apps on the Duix digital-human
// platform (OpenAPI v2) as Prometheus metrics.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"os/signal"
	"path"
	"regexp"
	"strings"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	sloggokit "github.com/tjhop/slog-gokit"

	"github.com/duix-exporter/duix_exporter/operator"
	"github.com/duix-exporter/duix_exporter/simulator"
)

const exporterName = "duix_exporter"

// telemetryPath is a path the mux serves as written: no pattern, escape, query or empty segment (RFC 3986's pchar).
var telemetryPath = regexp.MustCompile(`^(/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$`)

// releaseVersion is the version of this tree, used when the build did not set one with -ldflags (go build, go install).
//
//go:embed VERSION
var releaseVersion string

func main() { os.Exit(run(os.Args[1:])) }

// run parses the command line and runs the chosen command; it returns the process exit code.
func run(args []string) int {
	stdlog.SetOutput(io.Discard) // net/http logs there what an upstream sent unasked (its echo of our token): nothing of it is printed
	if version.Version == "" {
		version.Version = strings.TrimSpace(releaseVersion)
	}
	app := kingpin.New(exporterName, "Prometheus exporter for apps on the Duix digital-human platform (OpenAPI v2).")
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')

	var o serveOptions
	app.Flag("config.file", "Configuration file (YAML).").Default("duix.yml").StringVar(&o.configFile)
	app.Flag("log.level", "Only log messages with the given severity or above. One of: [debug, info, warn, error]").
		Default("info").EnumVar(&o.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages. One of: [logfmt, json]").
		Default("logfmt").EnumVar(&o.logFormat, "logfmt", "json")

	serve := app.Command("serve", "Serve metrics (the default command).").Default()
	o.web = kingpinflag.AddFlags(app, ":9866")
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&o.telemetryPath)
	app.Flag("web.max-requests", "Maximum number of parallel scrape requests. 0 disables the limit.").Default("40").IntVar(&o.maxRequests)
	app.Flag("scrape.timeout-offset", "Subtracted from Prometheus' scrape timeout (X-Prometheus-Scrape-Timeout-Seconds) to leave time to answer.").
		Default("500ms").DurationVar(&o.timeoutOffset)
	app.Flag("janitor.listen-address", "Address on which the janitor serves Alertmanager's webhook (POST /webhook), with the TLS and basic auth of --web.config.file. Empty: the janitor is off.").StringVar(&o.janitorAddress)
	app.Flag("config.check", "Validate the configuration file, print the result and exit (0 valid, 1 invalid). Contacts nothing.").BoolVar(&o.checkOnly)
	app.Flag("runtime.gomaxprocs", "The number of CPUs that run the exporter's Go code at once (GOMAXPROCS); 0: Go's default, every CPU the process may use.").
		Envar("GOMAXPROCS").Default("1").IntVar(&o.maxProcs)
	app.Flag("demo", "Run against a built-in simulator of the platform with three demo apps; no configuration file or credentials needed.").BoolVar(&o.demo)

	sim, so := simulator.Command(app)
	ops := operator.Register(app)

	cmd, err := app.Parse(args)
	switch {
	case err != nil:
	case o.maxProcs < 0:
		err = fmt.Errorf("--runtime.gomaxprocs must be 0 or more, got %d", o.maxProcs)
	case o.maxRequests < 0:
		err = fmt.Errorf("--web.max-requests must be 0 or more, got %d", o.maxRequests)
	case !telemetryPath.MatchString(o.telemetryPath) || path.Clean(o.telemetryPath) != o.telemetryPath: // served as written
		err = fmt.Errorf("--web.telemetry-path must be a clean path such as /metrics, got %.64q", o.telemetryPath)
	case o.timeoutOffset < 0: // it would lengthen scrapes past the 1 h bound of the header
		err = fmt.Errorf("--scrape.timeout-offset must be 0 or more, got %s", o.timeoutOffset)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v, try --help\n", exporterName, err)
		return 2
	}
	logger, slogger := newLogger(os.Stderr, o.logLevel, o.logFormat)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case serve.FullCommand():
		return runServe(ctx, o, logger, slogger)
	case sim:
		if err := simulator.Serve(ctx, *so, logger); err != nil {
			level.Error(logger).Log("msg", "Simulator failed", "err", err)
			return 1
		}
		return 0
	}
	code, ok := ops.Run(ctx, cmd, operator.Env{Program: exporterName, UserAgent: userAgent(), ConfigFile: o.configFile,
		Logger: logger, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if !ok {
		return 2
	}
	return code
}

// userAgent is sent with every call to the platform.
func userAgent() string { return exporterName + "/" + version.Version }

// newLogger returns the go-kit logger of the exporter's own lines, at lvl or above in format (logfmt or json), whose
// lines begin with ts, caller, level and msg as promlog's did; and a *slog.Logger for exporter-toolkit and net/http,
// whose records the slog-gokit bridge writes through the same go-kit logger, with the same keys.
func newLogger(w io.Writer, lvl, format string) (log.Logger, *slog.Logger) {
	out := log.NewLogfmtLogger(log.NewSyncWriter(w))
	if format == "json" {
		out = log.NewJSONLogger(log.NewSyncWriter(w))
	}
	allow := level.Allow(level.ParseDefault(lvl, level.InfoValue()))
	// Caller(5): the call site, past level's and the filter's Log.
	own := level.NewFilter(log.With(out, "ts", log.DefaultTimestampUTC, "caller", log.Caller(5)), allow)
	stamped := log.With(out, "ts", log.DefaultTimestampUTC)
	// The bridge logs level, [caller,] [time,] msg, attributes: level goes after caller, the record's time gives way to ts.
	bridged := log.LoggerFunc(func(kv ...any) error {
		head, i := make([]any, 0, len(kv)), 2
		if len(kv) > i+1 && kv[i] == "caller" {
			head, i = append(head, kv[i], kv[i+1]), i+2
		}
		head = append(head, kv[0], kv[1])
		if len(kv) > i+1 && kv[i] == slog.TimeKey {
			i += 2
		}
		return stamped.Log(append(head, kv[i:]...)...)
	})
	var slvl slog.LevelVar
	_ = slvl.UnmarshalText([]byte(lvl)) // one of debug, info, warn, error (kingpin's enum)
	return own, slog.New(sloggokit.NewGoKitHandler(bridged, &slvl))
}
