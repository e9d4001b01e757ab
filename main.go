// Command duix_exporter exports the concurrency, sessions and conversation
// limits of apps on the Duix digital-human platform (OpenAPI v2) as
// Prometheus metrics.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/duix-exporter/duix_exporter/internal/logging"
	"github.com/duix-exporter/duix_exporter/operator"
)

const exporterName = "duix_exporter"

// releaseVersion is the version of this tree, used when the build did not
// set one with -ldflags (go build, go install).
//
//go:embed VERSION
var releaseVersion string

func main() {
	os.Exit(run(os.Args[1:]))
}

// run parses the command line and runs the chosen command; it returns the
// process exit code.
func run(args []string) int {
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
	app.Flag("config.check", "Validate the configuration file, print the result and exit (0 valid, 1 invalid). Contacts nothing.").BoolVar(&o.checkOnly)
	app.Flag("runtime.gomaxprocs", "The number of CPUs that run the exporter's Go code at once (GOMAXPROCS); 0: Go's default, every CPU the process may use.").
		Envar("GOMAXPROCS").Default("1").IntVar(&o.maxProcs)
	app.Flag("demo", "Run against a built-in simulator of the platform with three demo apps; no configuration file or credentials needed.").BoolVar(&o.demo)

	sim := app.Command("simulator", "Serve a simulator of the platform with demo apps, for trying tools against it.")
	var so simulatorOptions
	sim.Flag("simulator.listen-address", "Address the simulator listens on.").Default("127.0.0.1:9867").StringVar(&so.listen)
	sim.Flag("simulator.churn", "How often demo sessions start and end (0 disables).").Default("3s").DurationVar(&so.churn)
	sim.Flag("simulator.latency", "Latency added to every answer.").Default("0s").DurationVar(&so.latency)
	sim.Flag("simulator.write-config", "Write an exporter configuration for the demo apps to this file.").StringVar(&so.writeConfig)
	sim.Flag("simulator.apps", "Serve this many generated apps (app-00000, app-00001, ...) instead of the demo apps, for load tests (0: the demo apps).").Default("0").IntVar(&so.fleet.Apps)
	sim.Flag("simulator.sessions", "Active sessions per generated app.").Default("2").IntVar(&so.fleet.Sessions)
	sim.Flag("simulator.conversations", "Conversations per generated app.").Default("1").IntVar(&so.fleet.Conversations)

	ops := operator.Register(app)

	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v, try --help\n", exporterName, err)
		return 2
	}
	if o.maxProcs < 0 {
		fmt.Fprintf(os.Stderr, "%s: --runtime.gomaxprocs must be 0 or more, got %d, try --help\n", exporterName, o.maxProcs)
		return 2
	}
	logger, slogger, err := logging.New(os.Stderr, o.logLevel, o.logFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch cmd {
	case serve.FullCommand():
		return runServe(o, logger, slogger)
	case sim.FullCommand():
		return runSimulator(so, logger)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, ok := ops.Run(ctx, cmd, operator.Env{
		Program:    exporterName,
		UserAgent:  userAgent(),
		ConfigFile: o.configFile,
		Logger:     logger,
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
	})
	if !ok {
		return 2
	}
	return code
}

// userAgent is sent with every call to the platform.
func userAgent() string { return exporterName + "/" + version.Version }
