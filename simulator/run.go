package simulator

// What the exporter's --demo and its simulator command run: the simulator
// on loopback with its demo (or generated) apps, and exporter
// configurations for them.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// StartDemo starts the simulator on loopback with sessions coming and going
// until ctx ends, and writes a matching configuration (keys in files, mode
// 0600) to a temporary directory. It returns the configuration's path and
// a cleanup.
func StartDemo(ctx context.Context, logger log.Logger) (string, func(), error) {
	sim, apps := NewDemo()
	base, closeSim, err := sim.Listen("127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "duix-demo-")
	if err != nil {
		closeSim()
		return "", nil, err
	}
	cleanup := func() { closeSim(); os.RemoveAll(dir) }
	path := filepath.Join(dir, "duix.yml")
	if err := WriteConfig(path, base, apps); err != nil {
		cleanup()
		return "", nil, err
	}
	go sim.Churn(ctx, time.Second, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))) // #nosec G404 -- demo session churn, not a secret
	level.Info(logger).Log("msg", "Demo mode: serving a simulated platform", "base_url", base, "apps", len(apps), "config", path)
	return path, cleanup, nil
}

// WriteConfig writes a configuration for the demo apps at baseURL to path;
// each app's key goes to its own file next to it.
func WriteConfig(path, baseURL string, apps []DemoApp) error {
	dir := filepath.Dir(path)
	var b strings.Builder
	fmt.Fprintf(&b, "# Configuration for the apps of the built-in simulator of the platform\napi:\n  base_url: %q\n  timeout: 5s\napps:\n", baseURL)
	for _, a := range apps {
		keyFile := a.Name + ".key" // as the configuration names it: relative to its own directory
		if err := os.WriteFile(filepath.Join(dir, keyFile), []byte(a.AppKey+"\n"), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(&b, "  - name: %q\n    app_id: %q\n    app_key_file: %q\n", a.Name, a.AppID, keyFile)
		if len(a.Conversations) > 0 {
			b.WriteString("    conversations:\n")
			for _, c := range a.Conversations {
				fmt.Fprintf(&b, "      - %q\n", c)
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// ServeOptions configure the simulator command.
type ServeOptions struct {
	Listen      string
	Churn       time.Duration // how often demo sessions start and end (0: never)
	Latency     time.Duration // added to every answer
	WriteConfig string        // where to write an exporter configuration for the apps ("": nowhere)
	Fleet       Fleet         // generated apps, unless Fleet.Apps is 0: the demo apps
}

// Command adds the simulator command to app: it returns the command's full
// name and the options its flags fill.
func Command(app *kingpin.Application) (string, *ServeOptions) {
	var so ServeOptions
	sim := app.Command("simulator", "Serve a simulator of the platform with demo apps, for trying tools against it.")
	sim.Flag("simulator.listen-address", "Address the simulator listens on.").Default("127.0.0.1:9867").StringVar(&so.Listen)
	sim.Flag("simulator.churn", "How often demo sessions start and end (0 disables).").Default("3s").DurationVar(&so.Churn)
	sim.Flag("simulator.latency", "Latency added to every answer.").Default("0s").DurationVar(&so.Latency)
	sim.Flag("simulator.write-config", "Write an exporter configuration for the demo apps to this file.").StringVar(&so.WriteConfig)
	sim.Flag("simulator.apps", "Serve this many generated apps (app-00000, app-00001, ...) instead of the demo apps, for load tests (0: the demo apps).").Default("0").IntVar(&so.Fleet.Apps)
	sim.Flag("simulator.sessions", "Active sessions per generated app.").Default("2").IntVar(&so.Fleet.Sessions)
	sim.Flag("simulator.conversations", "Conversations per generated app.").Default("1").IntVar(&so.Fleet.Conversations)
	return sim.FullCommand(), &so
}

// Serve serves the simulator on o.Listen until ctx ends.
func Serve(ctx context.Context, o ServeOptions, logger log.Logger) error {
	sim, apps := NewDemo()
	if o.Fleet.Apps != 0 {
		var err error
		if sim, apps, err = NewFleet(o.Fleet); err != nil {
			return fmt.Errorf("cannot generate the apps: %w", err)
		}
	}
	if o.Latency > 0 {
		sim.SetLatency("", "", o.Latency)
	}
	base, closeSim, err := sim.ListenWithMetrics(o.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", o.Listen, err)
	}
	defer closeSim()
	if o.WriteConfig != "" {
		if err := WriteConfig(o.WriteConfig, base, apps); err != nil {
			return fmt.Errorf("cannot write the configuration: %w", err)
		}
		level.Info(logger).Log("msg", "Wrote an exporter configuration for the demo apps", "file", o.WriteConfig)
	}
	if o.Churn > 0 {
		go sim.Churn(ctx, o.Churn, nil)
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	if o.Fleet.Apps != 0 {
		names = []string{names[0], "...", names[len(names)-1]}
	}
	// Load tests read base_url from this line; the simulator's own metrics
	// (duix_simulator_requests_total) are at /metrics of the same address.
	level.Info(logger).Log("msg", "Simulator serving", "base_url", base, "apps", strings.Join(names, ","), "app_count", len(apps))
	<-ctx.Done()
	return nil
}
