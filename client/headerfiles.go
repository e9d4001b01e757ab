package client

import "fmt"

// HeaderFile is a header whose value is read from a file at every request.
type HeaderFile struct{ Name, Path string }

// readHeaderFiles reads the values of the transport's HeaderFiles, in
// order, as prometheus/common would at every request, with the care of a
// key file (a regular file of at most 64 KiB, opened without blocking, not
// empty once white space is trimmed). A file that cannot be read fails the
// request: its value would be sent without the client knowing it.
func (t *Transport) readHeaderFiles() ([]string, error) {
	if len(t.HeaderFiles) == 0 {
		return nil, nil
	}
	values := make([]string, len(t.HeaderFiles))
	for i, h := range t.HeaderFiles {
		b, _, err := readSecretFile(h.Path)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Name, err)
		}
		values[i] = string(b)
	}
	return values, nil
}
