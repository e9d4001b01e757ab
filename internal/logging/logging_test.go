package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log/level"
	"github.com/go-logfmt/logfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pair is one key and value of a line, in the line's order.
type pair struct{ key, value string }

// logfmtLines splits logfmt output into lines of pairs.
func logfmtLines(t *testing.T, out string) [][]pair {
	t.Helper()
	var lines [][]pair
	d := logfmt.NewDecoder(strings.NewReader(out))
	for d.ScanRecord() {
		var line []pair
		for d.ScanKeyval() {
			line = append(line, pair{string(d.Key()), string(d.Value())})
		}
		lines = append(lines, line)
	}
	require.NoError(t, d.Err())
	return lines
}

// jsonLines splits JSON output into lines of pairs, in the order of the
// text.
func jsonLines(t *testing.T, out string) [][]pair {
	t.Helper()
	var lines [][]pair
	for _, text := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		tok, err := d.Token()
		require.NoError(t, err, text)
		require.Equal(t, json.Delim('{'), tok, text)
		var line []pair
		for d.More() {
			k, err := d.Token()
			require.NoError(t, err, text)
			var v any
			require.NoError(t, d.Decode(&v), text)
			s, ok := v.(string)
			if !ok {
				b, _ := json.Marshal(v)
				s = string(b)
			}
			line = append(line, pair{k.(string), s})
		}
		_, err = d.Token()
		require.NoError(t, err, text)
		_, err = d.Token()
		require.ErrorIs(t, err, io.EOF, "one object per line: %s", text)
		lines = append(lines, line)
	}
	return lines
}

func keys(line []pair) []string {
	out := make([]string, len(line))
	for i, p := range line {
		out[i] = p.key
	}
	return out
}

func value(line []pair, key string) string {
	for _, p := range line {
		if p.key == key {
			return p.value
		}
	}
	return "<absent>"
}

// here returns the file:line of its caller, plus delta lines.
func here(delta int) string {
	_, _, line, _ := runtime.Caller(1)
	return "logging_test.go:" + strconv.Itoa(line+delta)
}

func TestEveryLineBeginsWithTheSameKeys(t *testing.T) {
	for _, format := range []string{"logfmt", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			l, sl, err := New(&buf, "debug", format)
			require.NoError(t, err)

			kitCaller := here(1)
			level.Info(l).Log("msg", "from go-kit", "app", "a", "err", errors.New("boom"))
			level.Debug(l).Log("app", "b", "msg", "key order given out of order")
			slogCaller := here(1)
			sl.Info("from slog", "address", "127.0.0.1:9866", slog.Group("tls", "enabled", false, slog.Group("cert", "file", "c.pem")))
			sl.WithGroup("web").With("listener", 1).Warn("grouped", "http2", false)
			sl.Error("an error", "err", errors.New("bad"), slog.Group("empty"), "d", 1500*time.Millisecond)

			var lines [][]pair
			if format == "json" {
				lines = jsonLines(t, buf.String())
			} else {
				lines = logfmtLines(t, buf.String())
			}
			require.Len(t, lines, 5, buf.String())
			for i, line := range lines {
				require.GreaterOrEqual(t, len(line), 4, "line %d", i)
				assert.Equal(t, []string{"ts", "caller", "level", "msg"}, keys(line)[:4], "line %d: %s", i, buf.String())
				ts, err := time.Parse(time.RFC3339Nano, value(line, "ts"))
				require.NoError(t, err, "line %d", i)
				assert.Equal(t, time.UTC, ts.Location(), "line %d", i)
				assert.WithinDuration(t, time.Now(), ts, time.Hour, "line %d", i)
			}
			assert.Equal(t, []string{"ts", "caller", "level", "msg", "app", "err"}, keys(lines[0]))
			assert.Equal(t, kitCaller, value(lines[0], "caller"))
			assert.Equal(t, "info", value(lines[0], "level"))
			assert.Equal(t, "boom", value(lines[0], "err"))
			assert.Equal(t, "debug", value(lines[1], "level"))
			assert.Equal(t, "key order given out of order", value(lines[1], "msg"))

			assert.Equal(t, []string{"ts", "caller", "level", "msg", "address", "tls.enabled", "tls.cert.file"}, keys(lines[2]))
			assert.Equal(t, slogCaller, value(lines[2], "caller"))
			assert.Equal(t, "info", value(lines[2], "level"))
			assert.Equal(t, "from slog", value(lines[2], "msg"))
			assert.Equal(t, "c.pem", value(lines[2], "tls.cert.file"))
			assert.Equal(t, []string{"ts", "caller", "level", "msg", "web.listener", "web.http2"}, keys(lines[3]))
			assert.Equal(t, "warn", value(lines[3], "level"))
			assert.Equal(t, []string{"ts", "caller", "level", "msg", "err", "d"}, keys(lines[4]), "an empty group is left out")
			assert.Equal(t, "error", value(lines[4], "level"))
			assert.Equal(t, "bad", value(lines[4], "err"))
			assert.Equal(t, "1.5s", value(lines[4], "d"))
		})
	}
}

func TestLevelFiltersBothLoggers(t *testing.T) {
	var buf bytes.Buffer
	l, sl, err := New(&buf, "warn", "logfmt")
	require.NoError(t, err)
	level.Info(l).Log("msg", "dropped")
	sl.Info("dropped")
	sl.Debug("dropped")
	level.Warn(l).Log("msg", "kept")
	sl.Error("kept")
	assert.NotContains(t, buf.String(), "dropped")
	assert.Equal(t, 2, strings.Count(buf.String(), "msg=kept"), buf.String())
	assert.False(t, sl.Enabled(t.Context(), slog.LevelInfo), "slog callers can skip the work")
}

func TestJSONKeepsTheFirstPlaceAndTheLastValueOfARepeatedKey(t *testing.T) {
	var buf bytes.Buffer
	l, _, err := New(&buf, "info", "json")
	require.NoError(t, err)
	level.Info(l).Log("msg", "m", "a", 1, "b", 2, "a", 3, "odd")
	lines := jsonLines(t, buf.String())
	require.Len(t, lines, 1)
	assert.Equal(t, []string{"ts", "caller", "level", "msg", "a", "b", "odd"}, keys(lines[0]))
	assert.Equal(t, "3", value(lines[0], "a"))
	assert.Equal(t, "(MISSING)", value(lines[0], "odd"))
}

func TestUnknownLevelOrFormat(t *testing.T) {
	_, _, err := New(io.Discard, "loud", "logfmt")
	assert.ErrorContains(t, err, `unknown log level "loud"`)
	_, _, err = New(io.Discard, "info", "xml")
	assert.ErrorContains(t, err, `unknown log format "xml"`)
}
