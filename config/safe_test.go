package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
)

const (
	goodOne = `apps:
  - name: one
    app_id: "1"
    app_key: SECRET-reload-one
`
	goodTwo = `api:
  timeout: 3s
apps:
  - name: two
    app_id: "2"
    token: SECRET-reload-two
  - name: three
    app_id: "3"
    token: SECRET-reload-three
`
	badTwoCredentials = `apps:
  - name: broken
    app_id: "1"
    app_key: SECRET-reload-bad
    token: SECRET-reload-bad
`
)

func writeConfig(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

func TestSafeConfigReload(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	sc := NewSafeConfig(reg)
	current := applied(sc)
	clock := time.Unix(1700000000, 0)
	sc.now = func() time.Time { return clock }

	var (
		logs  platformtest.Buffer
		calls []*Config
	)
	logger := log.NewLogfmtLogger(&logs)
	sc.Subscribe(func(c *Config) error { calls = append(calls, c); return nil })

	assert.Nil(t, current(), "nothing loaded yet")

	path := filepath.Join(t.TempDir(), "duix.yml")

	// 1. A good file is loaded.
	writeConfig(t, path, goodOne)
	require.NoError(t, sc.ReloadConfig(path, logger))
	first := current()
	require.NotNil(t, first)
	assert.Equal(t, "one", first.Apps[0].Name)
	assert.Equal(t, 1.0, testutil.ToFloat64(sc.reloadSuccess))
	assert.Equal(t, 1700000000.0, testutil.ToFloat64(sc.reloadTimestamp))
	require.Len(t, calls, 1)
	assert.Same(t, first, calls[0], "subscribers get the config applied")

	// 2. A bad file keeps the old configuration.
	clock = clock.Add(time.Minute)
	writeConfig(t, path, badTwoCredentials)
	err := sc.ReloadConfig(path, logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "found app_key and token")
	assert.Same(t, first, current(), "old config kept")
	assert.Equal(t, 0.0, testutil.ToFloat64(sc.reloadSuccess))
	assert.Equal(t, 1700000000.0, testutil.ToFloat64(sc.reloadTimestamp), "timestamp of the last success unchanged")
	assert.Len(t, calls, 1, "subscriber not called on failure")
	assert.Contains(t, logs.String(), "level=error")
	assert.Contains(t, logs.String(), "found app_key and token")

	// A missing file is a failed reload too.
	err = sc.ReloadConfig(filepath.Join(t.TempDir(), "missing.yml"), logger)
	require.Error(t, err)
	assert.Same(t, first, current())
	assert.Equal(t, 0.0, testutil.ToFloat64(sc.reloadSuccess))
	assert.Len(t, calls, 1)

	// 3. A good file again: swapped, gauge back to 1, timestamp updated.
	clock = clock.Add(time.Minute)
	writeConfig(t, path, goodTwo)
	require.NoError(t, sc.ReloadConfig(path, logger))
	second := current()
	require.NotSame(t, first, second)
	require.Len(t, second.Apps, 2)
	assert.Equal(t, "two", second.Apps[0].Name)
	assert.Equal(t, 1.0, testutil.ToFloat64(sc.reloadSuccess))
	assert.Equal(t, 1700000120.0, testutil.ToFloat64(sc.reloadTimestamp))
	require.Len(t, calls, 2)
	assert.Same(t, second, calls[1])
	assert.Contains(t, logs.String(), "level=info")

	assert.NotContains(t, logs.String(), "SECRET", "no secret in the logs")
}

func TestSafeConfigMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	sc := NewSafeConfig(reg)
	sc.now = func() time.Time { return time.Unix(1700000000, 500000000) }

	path := filepath.Join(t.TempDir(), "duix.yml")
	writeConfig(t, path, goodOne)
	require.NoError(t, sc.ReloadConfig(path, log.NewNopLogger()))

	want := `
# HELP duix_exporter_config_last_reload_success_timestamp_seconds Timestamp of the last successful configuration reload.
# TYPE duix_exporter_config_last_reload_success_timestamp_seconds gauge
duix_exporter_config_last_reload_success_timestamp_seconds 1.7000000005e+09
# HELP duix_exporter_config_last_reload_successful Whether the last configuration reload attempt was successful.
# TYPE duix_exporter_config_last_reload_successful gauge
duix_exporter_config_last_reload_successful 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))

	writeConfig(t, path, "apps: []\n")
	require.Error(t, sc.ReloadConfig(path, log.NewNopLogger()))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(
		strings.Replace(want, "successful 1", "successful 0", 1))))
}

func TestSafeConfigNilRegistererAndLogger(t *testing.T) {
	sc := NewSafeConfig(nil)
	current := applied(sc)
	path := filepath.Join(t.TempDir(), "duix.yml")
	writeConfig(t, path, goodOne)
	require.NoError(t, sc.ReloadConfig(path, nil))
	require.NotNil(t, current())
	writeConfig(t, path, "nope: 1\n")
	require.Error(t, sc.ReloadConfig(path, nil))
	assert.Equal(t, "one", current().Apps[0].Name)
}

func TestSafeConfigSubscribersInOrder(t *testing.T) {
	sc := NewSafeConfig(prometheus.NewRegistry())
	var order []string
	sc.Subscribe(func(c *Config) error {
		order = append(order, "a")
		return nil
	})
	sc.Subscribe(func(*Config) error { order = append(order, "b"); return nil })

	path := filepath.Join(t.TempDir(), "duix.yml")
	writeConfig(t, path, goodOne)
	require.NoError(t, sc.ReloadConfig(path, log.NewNopLogger()))
	require.NoError(t, sc.ReloadConfig(path, log.NewNopLogger()))
	assert.Equal(t, []string{"a", "b", "a", "b"}, order)
}

func TestSafeConfigConcurrent(t *testing.T) {
	sc := NewSafeConfig(prometheus.NewRegistry())
	current := applied(sc)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	bad := filepath.Join(dir, "bad.yml")
	writeConfig(t, good, goodTwo)
	writeConfig(t, bad, badTwoCredentials)
	require.NoError(t, sc.ReloadConfig(good, nil))

	var (
		mu    sync.Mutex
		seen  int
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	sc.Subscribe(func(c *Config) error {
		mu.Lock()
		seen++
		mu.Unlock()
		assert.Len(t, c.Apps, 2)
		return nil
	})
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range 20 {
				if (i+j)%2 == 0 {
					_ = sc.ReloadConfig(good, nil)
				} else {
					_ = sc.ReloadConfig(bad, nil)
				}
				c := current()
				if assert.NotNil(t, c) {
					assert.Len(t, c.Apps, 2)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, 80, seen)
}

func TestSafeConfigSubscriberErrorKeepsOldConfig(t *testing.T) {
	sc := NewSafeConfig(prometheus.NewRegistry())
	var refuse bool
	sc.Subscribe(func(*Config) error {
		if refuse {
			return errors.New("cannot build clients")
		}
		return nil
	})
	current := applied(sc) // after the subscriber that refuses
	path := filepath.Join(t.TempDir(), "duix.yml")
	writeConfig(t, path, goodOne)
	require.NoError(t, sc.ReloadConfig(path, log.NewNopLogger()))
	first := current()

	refuse = true
	err := sc.ReloadConfig(path, log.NewNopLogger())
	require.ErrorContains(t, err, "cannot build clients")
	assert.Same(t, first, current())
	assert.Equal(t, 0.0, testutil.ToFloat64(sc.reloadSuccess))
}

// applied subscribes to sc and returns what its last successful reload applied.
func applied(sc *SafeConfig) func() *Config {
	var (
		mu   sync.Mutex
		last *Config
	)
	sc.Subscribe(func(c *Config) error {
		mu.Lock()
		defer mu.Unlock()
		last = c
		return nil
	})
	return func() *Config {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// A configuration that may not fit in the memory limit, which
// --config.check refuses, is loaded all the same, with a warning.
func TestAReloadOverTheMemoryLimitWarns(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(50 << 20))
	path := filepath.Join(t.TempDir(), "duix.yml")
	writeConfig(t, path, goodOne) // 24 MiB + 24 KiB + 16 × 512 KiB × 7: 80 MiB
	var logs platformtest.Buffer
	sc := NewSafeConfig(nil)
	require.NoError(t, sc.ReloadConfig(path, log.NewLogfmtLogger(&logs)))
	assert.Contains(t, logs.String(), `level=warn msg="The configuration may not fit in the memory limit" limit_from=GOMEMLIMIT err="api.max_concurrency (16)`)
	assert.Contains(t, logs.String(), `over the memory limit of 50 MiB`)

	debug.SetMemoryLimit(200 << 20)
	var fits platformtest.Buffer
	require.NoError(t, sc.ReloadConfig(path, log.NewLogfmtLogger(&fits)))
	assert.NotContains(t, fits.String(), "level=warn")
}
