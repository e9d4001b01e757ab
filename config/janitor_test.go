package config

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJanitorDefaults(t *testing.T) {
	cfg, err := Parse([]byte("apps: [{name: a, app_id: '1', token: t}]"), "")
	require.NoError(t, err)
	assert.Equal(t, Janitor{MaxStopsPerHour: 10, DryRun: false, AlertName: "DuixSessionStuck"}, cfg.Janitor)
	assert.Nil(t, cfg.Apps[0].Janitor, "no app opts in unless asked")

	// A partial section keeps the other defaults.
	cfg, err = Parse([]byte("janitor: {dry_run: true}\napps: [{name: a, app_id: '1', token: t}]"), "")
	require.NoError(t, err)
	assert.Equal(t, Janitor{MaxStopsPerHour: 10, DryRun: true, AlertName: "DuixSessionStuck"}, cfg.Janitor)
}

func TestJanitorOptIn(t *testing.T) {
	doc := `
janitor: {max_stops_per_hour: 3, alert_name: KioskStuck}
apps:
  - {name: kiosk, app_id: '1', token: t, janitor: {max_session_age: 2h}}
  - {name: web, app_id: '2', token: t}
`
	cfg, err := Parse([]byte(doc), "")
	require.NoError(t, err)
	assert.Equal(t, Janitor{MaxStopsPerHour: 3, AlertName: "KioskStuck"}, cfg.Janitor)
	assert.Equal(t, &AppJanitor{MaxSessionAge: model.Duration(2 * time.Hour)}, cfg.Apps[0].Janitor)
	assert.Nil(t, cfg.Apps[1].Janitor)
}

func TestJanitorInvalid(t *testing.T) {
	// The top-level section and the app's, each left empty when "".
	tests := []struct{ name, top, app, want string }{
		{"zero budget", "{max_stops_per_hour: 0}", "", "janitor.max_stops_per_hour: must be between 1 and 10000, got 0"},
		{"negative budget", "{max_stops_per_hour: -1}", "", "janitor.max_stops_per_hour: must be between 1 and 10000, got -1"},
		{"huge budget", "{max_stops_per_hour: 10001}", "", "janitor.max_stops_per_hour: must be between 1 and 10000, got 10001"},
		{"empty alert name", "{alert_name: ''}", "", "janitor.alert_name: must be an alert name"},
		{"alert name with a matcher", "{alert_name: 'Duix=~.*'}", "", "janitor.alert_name: must be an alert name"},
		{"unknown top-level field", "{max_stops: 5}", "", "field max_stops not found"},
		{"budget of the wrong type", "{max_stops_per_hour: SECRET-x}", "", "cannot unmarshal !!str into int"},
		{"app section without an age", "", "{}", `app "a" (apps[0]): janitor.max_session_age: must be at least 1m, got 0s`},
		{"app section left empty", "", "", `app "a" (apps[0]): janitor.max_session_age: must be at least 1m, got 0s`},
		{"app section of null", "", "~", `app "a" (apps[0]): janitor.max_session_age: must be at least 1m, got 0s`},
		{"negative age", "", "{max_session_age: -2h}", "janitor: not a valid duration string"},
		{"age too short", "", "{max_session_age: 30s}", `app "a" (apps[0]): janitor.max_session_age: must be at least 1m, got 30s`},
		{"age without a unit", "", "{max_session_age: 7200}", "janitor: not a valid duration string"},
		{"unknown app field", "", "{max_session_age: 2h, dry_run: true}", "field dry_run not found"},
		{"app section of the wrong type", "", "yes", "cannot unmarshal !!bool into an app's janitor section"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "janitor: " + tt.top + "\napps: [{name: a, app_id: '1', token: t, janitor: " + tt.app + "}]"
			_, err := Parse([]byte(doc), "")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "SECRET")
		})
	}
}
