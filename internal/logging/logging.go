// Package logging builds the exporter's logger: go-kit/log lines, in logfmt
// or JSON, that always begin with the keys ts, caller, level and msg in that
// order, and a log/slog handler that writes through the same logger (for
// exporter-toolkit and net/http), so that every line has one format.
package logging

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// The keys every line begins with, in this order.
const (
	TimeKey   = "ts"
	CallerKey = "caller"
	LevelKey  = "level"
	MsgKey    = "msg"
)

var leading = [...]string{TimeKey, CallerKey, LevelKey, MsgKey}

// New returns a logger writing to w in format ("logfmt" or "json") the
// lines at lvl ("debug", "info", "warn" or "error") or above, and a
// *slog.Logger writing the same lines through it.
func New(w io.Writer, lvl, format string) (log.Logger, *slog.Logger, error) {
	var out log.Logger
	switch format {
	case "logfmt":
		out = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		out = jsonLogger{log.NewSyncWriter(w)}
	default:
		return nil, nil, fmt.Errorf("unknown log format %q", format)
	}
	var (
		opt  level.Option
		slvl slog.Level
	)
	switch lvl {
	case "debug":
		opt, slvl = level.AllowDebug(), slog.LevelDebug
	case "info":
		opt, slvl = level.AllowInfo(), slog.LevelInfo
	case "warn":
		opt, slvl = level.AllowWarn(), slog.LevelWarn
	case "error":
		opt, slvl = level.AllowError(), slog.LevelError
	default:
		return nil, nil, fmt.Errorf("unknown log level %q", lvl)
	}
	base := level.NewFilter(ordered{out}, opt)
	sl := slog.New(&slogHandler{l: base, min: slvl})
	return log.With(base, TimeKey, log.DefaultTimestampUTC, CallerKey, log.DefaultCaller), sl, nil
}

// ordered moves the leading keys to the front of a line, in their order;
// the other pairs follow as they were given.
type ordered struct{ next log.Logger }

func (o ordered) Log(keyvals ...any) error {
	if len(keyvals)%2 == 1 {
		keyvals = append(keyvals, log.ErrMissingValue)
	}
	out := make([]any, 0, len(keyvals))
	var taken [len(leading)]int // index+1 of each leading key's pair
	for i := 0; i < len(keyvals); i += 2 {
		k, ok := keyvals[i].(string)
		if !ok {
			continue
		}
		for j, name := range leading {
			if k == name && taken[j] == 0 {
				taken[j] = i + 1
				break
			}
		}
	}
	for _, t := range taken {
		if t > 0 {
			out = append(out, keyvals[t-1], keyvals[t])
		}
	}
	for i := 0; i < len(keyvals); i += 2 {
		if !isTaken(taken[:], i) {
			out = append(out, keyvals[i], keyvals[i+1])
		}
	}
	return o.next.Log(out...)
}

func isTaken(taken []int, i int) bool {
	for _, t := range taken {
		if t == i+1 {
			return true
		}
	}
	return false
}

// jsonLogger writes a line as one JSON object whose members keep the order
// of the pairs (go-kit's JSON logger sorts them). A key given twice keeps
// its first place and its last value. Values are rendered as go-kit's JSON
// logger renders them.
type jsonLogger struct{ w io.Writer }

func (l jsonLogger) Log(keyvals ...any) error {
	var (
		keys []string
		vals []any
		at   = map[string]int{}
	)
	for i := 0; i < len(keyvals); i += 2 {
		var v any = log.ErrMissingValue
		if i+1 < len(keyvals) {
			v = keyvals[i+1]
		}
		k := keyString(keyvals[i])
		if j, ok := at[k]; ok {
			vals[j] = v
			continue
		}
		at[k] = len(keys)
		keys = append(keys, k)
		vals = append(vals, v)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, k)
		b.WriteByte(':')
		writeJSON(&b, jsonValue(vals[i]))
	}
	b.WriteString("}\n")
	_, err := l.w.Write(b.Bytes())
	return err
}

// writeJSON appends v as JSON; a value JSON cannot encode is written as
// its text.
func writeJSON(b *bytes.Buffer, v any) {
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		one.Reset()
		_ = enc.Encode(fmt.Sprintf("%+v", v))
	}
	b.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
}

func keyString(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case fmt.Stringer:
		return safeString(x)
	default:
		return fmt.Sprint(x)
	}
}

// jsonValue renders v as go-kit's JSON logger does: JSON and text
// marshalers as they marshal, errors and Stringers as their text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case json.Marshaler, encoding.TextMarshaler:
		return v
	case error:
		return safeError(x)
	case fmt.Stringer:
		return safeString(x)
	}
	return v
}

func safeString(s fmt.Stringer) (out string) {
	defer func() {
		if p := recover(); p != nil {
			if v := reflect.ValueOf(s); v.Kind() == reflect.Pointer && v.IsNil() {
				out = "NULL"
			} else {
				out = fmt.Sprintf("PANIC in String method: %v", p)
			}
		}
	}()
	return s.String()
}

func safeError(err error) (out any) {
	defer func() {
		if p := recover(); p != nil {
			if v := reflect.ValueOf(err); v.Kind() == reflect.Pointer && v.IsNil() {
				out = nil
			} else {
				out = fmt.Sprintf("PANIC in Error method: %v", p)
			}
		}
	}()
	return err.Error()
}
