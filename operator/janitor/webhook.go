package janitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// alert holds the two labels the janitor reads; the others are skipped
// unread, so that a large payload costs little once decoded.
type alert struct {
	Status string `json:"status"`
	Labels struct {
		AlertName string `json:"alertname"`
		App       string `json:"app"`
	} `json:"labels"`
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
