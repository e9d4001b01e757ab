package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/duix-exporter/duix_exporter/internal/demo"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// writeDemoConfig writes an exporter configuration for the demo apps.
func writeDemoConfig(path, baseURL string, apps []simulator.DemoApp) error {
	return demo.WriteConfig(path, baseURL, apps)
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
