package config

import (
	"fmt"
	"regexp"
	"time"

	"github.com/prometheus/common/model"
)

// Defaults and limits of the janitor (docs/janitor.md).
const (
	DefaultJanitorMaxStopsPerHour = 10
	DefaultJanitorAlertName       = "DuixSessionStuck"

	MaxJanitorMaxStopsPerHour = 10000
	MinJanitorMaxSessionAge   = model.Duration(time.Minute)
)

// DefaultJanitor is the top-level janitor section used when the section,
// or one of its fields, is absent.
var DefaultJanitor = Janitor{MaxStopsPerHour: DefaultJanitorMaxStopsPerHour, AlertName: DefaultJanitorAlertName}

// alertNameRE is what Prometheus' alerting rules accept as an alert name.
var alertNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,127}$`)

// Janitor is the top-level janitor section: what the janitor acts on and
// how much, for every app that opts in with an AppJanitor. It does nothing
// unless the janitor's listener is turned on (--janitor.listen-address).
type Janitor struct {
	// MaxStopsPerHour bounds the sessions stopped in any hour, all apps
	// together, 1..10000.
	MaxStopsPerHour int `yaml:"max_stops_per_hour"`
	// DryRun decides and counts as usual but stops nothing.
	DryRun bool `yaml:"dry_run"`
	// AlertName is the only alert the janitor acts on.
	AlertName string `yaml:"alert_name"`
}

// AppJanitor is the janitor section of an app: its presence opts the app
// in.
type AppJanitor struct {
	// MaxSessionAge: the janitor stops the app's sessions older than this,
	// by the exporter's own knowledge of their start; at least 1m.
	MaxSessionAge model.Duration `yaml:"max_session_age"`
}

// UnmarshalYAML implements yaml.Unmarshaler: fields that are absent keep
// their value from DefaultJanitor.
func (j *Janitor) UnmarshalYAML(unmarshal func(any) error) error {
	*j = DefaultJanitor
	type janitorFields Janitor
	if err := unmarshal((*janitorFields)(j)); err != nil {
		return locateError("janitor", err)
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, so that an error names the
// section.
func (a *AppJanitor) UnmarshalYAML(unmarshal func(any) error) error {
	type appJanitorFields AppJanitor
	if err := unmarshal((*appJanitorFields)(a)); err != nil {
		return locateError("janitor", err)
	}
	return nil
}

// validateJanitor checks the top-level janitor section and the janitor
// section of every app.
func (c *Config) validateJanitor() error {
	j := c.Janitor
	if j.MaxStopsPerHour < 1 || j.MaxStopsPerHour > MaxJanitorMaxStopsPerHour {
		return fmt.Errorf("janitor.max_stops_per_hour: must be between 1 and %d, got %d", MaxJanitorMaxStopsPerHour, j.MaxStopsPerHour)
	}
	if !alertNameRE.MatchString(j.AlertName) {
		return fmt.Errorf("janitor.alert_name: must be an alert name matching %s", alertNameRE)
	}
	for i, a := range c.Apps {
		if a.Janitor == nil {
			continue
		}
		if age := a.Janitor.MaxSessionAge; age < MinJanitorMaxSessionAge {
			return fmt.Errorf("app %q (apps[%d]): janitor.max_session_age: must be at least %s, got %s", a.Name, i, MinJanitorMaxSessionAge, age)
		}
	}
	return nil
}

// JanitorApps returns the maximum session age of every app that opted in
// to the janitor, by app name.
func (c *Config) JanitorApps() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, a := range c.Apps {
		if a.Janitor != nil {
			out[a.Name] = time.Duration(a.Janitor.MaxSessionAge)
		}
	}
	return out
}
