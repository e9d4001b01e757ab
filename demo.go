package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// startDemo starts the simulator on loopback with sessions coming and going,
// and writes a matching configuration (keys in files, mode 0600) to a
// temporary directory. It returns the configuration's path and a cleanup.
func startDemo(ctx context.Context, logger log.Logger) (string, func(), error) {
	sim, apps := simulator.NewDemo()
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
	if err := writeDemoConfig(path, base, apps); err != nil {
		cleanup()
		return "", nil, err
	}
	go sim.Churn(ctx, 2*time.Second, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))) // #nosec G404 -- demo session churn, not a secret
	level.Info(logger).Log("msg", "Demo mode: serving a simulated platform", "base_url", base, "apps", len(apps), "config", path)
	return path, cleanup, nil
}

// writeDemoConfig writes a configuration for the demo apps; each app's key
// goes to its own file next to it.
func writeDemoConfig(path, baseURL string, apps []simulator.DemoApp) error {
	dir := filepath.Dir(path)
	var b strings.Builder
	fmt.Fprintf(&b, "# Configuration for the demo apps of the built-in simulator.\napi:\n  base_url: %q\n  timeout: 5s\napps:\n", baseURL)
	for _, a := range apps {
		keyFile := filepath.Join(dir, a.Name+".key")
		if err := os.WriteFile(keyFile, []byte(a.AppKey+"\n"), 0o600); err != nil {
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

type simulatorOptions struct {
	listen      string
	churn       time.Duration
	latency     time.Duration
	writeConfig string
	fleet       simulator.Fleet // generated apps unless fleet.Apps is 0
}

// runSimulator implements the simulator command.
func runSimulator(o simulatorOptions, logger log.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sim, apps := simulator.NewDemo()
	if o.fleet.Apps != 0 {
		var err error
		if sim, apps, err = simulator.NewFleet(o.fleet); err != nil {
			level.Error(logger).Log("msg", "Cannot generate the apps", "err", err)
			return 1
		}
	}
	if o.latency > 0 {
		sim.SetLatency("", "", o.latency)
	}
	base, closeSim, err := sim.ListenWithMetrics(o.listen)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot listen", "address", o.listen, "err", err)
		return 1
	}
	defer closeSim()
	if o.writeConfig != "" {
		if err := writeDemoConfig(o.writeConfig, base, apps); err != nil {
			level.Error(logger).Log("msg", "Cannot write the configuration", "file", o.writeConfig, "err", err)
			return 1
		}
		level.Info(logger).Log("msg", "Wrote an exporter configuration for the demo apps", "file", o.writeConfig)
	}
	if o.churn > 0 {
		go sim.Churn(ctx, o.churn, nil)
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	if o.fleet.Apps != 0 {
		names = []string{names[0], "...", names[len(names)-1]}
	}
	// Load tests read base_url from this line; the simulator's own metrics
	// (duix_simulator_requests_total) are at /metrics of the same address.
	level.Info(logger).Log("msg", "Simulator serving", "base_url", base, "apps", strings.Join(names, ","), "app_count", len(apps))
	<-ctx.Done()
	return 0
}
