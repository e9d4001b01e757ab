package client

import (
	"fmt"
	"net/http"
)

// Header is one value of a header the client sends itself (see
// Transport.Headers): Value as it is when Path is empty, else the content
// of the file at Path, read at every request.
type Header struct{ Name, Value, Path string }

// readHeaderFiles reads the values of the transport's Headers that come
// from files, in order, as prometheus/common would at every request, with
// the care of a
// key file (a regular file of at most 64 KiB, opened without blocking, not
// empty once white space is trimmed). A file that cannot be read fails the
// request: its value would be sent without the client knowing it.
func (t *Transport) readHeaderFiles() ([]string, error) {
	var values []string
	for _, h := range t.Headers {
		if h.Path == "" {
			continue
		}
		b, _, err := readSecretFile(h.Path)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Name, err)
		}
		values = append(values, string(b))
	}
	return values, nil
}

// addHeaders adds the transport's Headers to h, with files the values
// read from their files.
func (t *Transport) addHeaders(h http.Header, files []string) {
	for _, o := range t.Headers {
		v := o.Value
		if o.Path != "" {
			v, files = files[0], files[1:]
		}
		h.Add(o.Name, v)
	}
}
