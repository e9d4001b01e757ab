package janitor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
)

// Alert statuses of the webhook payload.
const (
	statusFiring   = "firing"
	statusResolved = "resolved"
)

// payload is what the janitor reads of Alertmanager's webhook payload
// (version 4): the status and the labels of each alert. Its annotations,
// values and every other field are not read: what to stop is decided from
// the exporter's own knowledge alone.
type payload struct {
	Version string  `json:"version"`
	Alerts  []alert `json:"alerts"`
}

type alert struct {
	Status string `json:"status"`
	Labels labels `json:"labels"`
}

// labels are the two labels the janitor reads, by their exact names
// (encoding/json would match struct fields in any case); the others are
// read, checked to be strings, and not kept.
type labels struct{ AlertName, App string }

// UnmarshalJSON implements json.Unmarshaler.
func (l *labels) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // none
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return cmp.Or(err, error(&json.UnmarshalTypeError{Value: "labels", Type: reflect.TypeFor[labels]()}))
	}
	for dec.More() {
		name, err := dec.Token()
		var value string
		if err == nil {
			err = dec.Decode(&value)
		}
		switch {
		case err != nil:
			return err
		case name == "alertname":
			l.AlertName = value
		case name == "app":
			l.App = value
		}
	}
	return nil
}

// decode reads a webhook payload from r and checks it. Its errors are one
// line of our own words: they quote nothing of the payload.
func decode(r io.Reader) (*payload, error) {
	var p *payload
	dec := json.NewDecoder(r)
	if err := dec.Decode(&p); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, errors.New("not an Alertmanager webhook payload: a field has the wrong type")
		}
		return nil, errors.New("not an Alertmanager webhook payload: not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, errors.New("not an Alertmanager webhook payload: data after the JSON object")
	}
	switch {
	case p == nil:
		return nil, errors.New("not an Alertmanager webhook payload: null")
	case p.Version == "":
		return nil, errors.New("not an Alertmanager webhook payload: no version")
	case p.Version != "4":
		return nil, errors.New(`unsupported webhook payload version: the janitor reads version "4"`)
	case p.Alerts == nil:
		return nil, errors.New("not an Alertmanager webhook payload: no alerts")
	}
	for i, a := range p.Alerts {
		switch {
		case a.Status != statusFiring && a.Status != statusResolved:
			return nil, fmt.Errorf("alerts[%d]: status must be %q or %q", i, statusFiring, statusResolved)
		case a.Labels.AlertName == "":
			return nil, fmt.Errorf("alerts[%d]: no alertname label", i)
		}
	}
	return p, nil
}
