package config_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/duix-exporter/duix_exporter/config"
)

// FuzzParse feeds arbitrary documents to config.Parse. Its seed corpus in
// testdata/fuzz/FuzzParse/ holds every file of testdata/ (valid and
// invalid) and a few edge cases; relative file names resolve against
// testdata/, where the key and token files of the seeds are.
//
// Beyond "never panics": an accepted configuration is valid by the rules
// the README states; it prints without its secrets; what it prints is
// accepted again and prints the same, with every secret masked.
func FuzzParse(f *testing.F) {
	nameRE := regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,128}$`)
	// Absolute, as Load makes it: printed paths are then absolute too.
	dir, err := filepath.Abs("testdata")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, dir)
		if err != nil {
			if cfg != nil {
				t.Fatalf("an error and a configuration: %v", err)
			}
			return
		}
		if len(cfg.Apps) == 0 {
			t.Fatalf("accepted without apps: %q", data)
		}
		a := cfg.API
		if a.Timeout <= 0 || a.ConversationRefresh <= 0 || a.MinInterval < 0 ||
			a.MaxConcurrency < 1 || a.MaxConcurrency > config.MaxMaxConcurrency || a.MaxResponseBytes < config.MinMaxResponseBytes {
			t.Fatalf("accepted api settings out of range: %+v", a)
		}
		if a.AuthHeader != config.AuthHeaderAuthorization && a.AuthHeader != config.AuthHeaderToken {
			t.Fatalf("accepted auth_header %q", a.AuthHeader)
		}
		if u := strings.ToLower(a.BaseURL); !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") { // a scheme's case is free
			t.Fatalf("accepted base_url %q", a.BaseURL)
		}
		names, ids := map[string]bool{}, map[string]bool{}
		for _, app := range cfg.Apps {
			if !nameRE.MatchString(app.Name) || names[app.Name] || app.AppID == "" || ids[app.AppID] {
				t.Fatalf("accepted app name %q / app_id %q (invalid or duplicate)", app.Name, app.AppID)
			}
			names[app.Name], ids[app.AppID] = true, true
			n := 0
			for _, c := range []string{string(app.AppKey), app.AppKeyFile, string(app.Token), app.TokenFile} {
				if c != "" {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("app %q: accepted %d credentials", app.Name, n)
			}
			if app.UsesKey() != (app.TokenTTL > 0) {
				t.Fatalf("app %q: token_ttl %s with UsesKey %v", app.Name, app.TokenTTL, app.UsesKey())
			}
		}

		printed := marshal(t, cfg)
		again, err := config.Parse([]byte(printed), dir)
		if err != nil {
			t.Fatalf("the printed configuration is refused: %v\n%s", err, printed)
		}
		if marshal(t, again) != printed {
			t.Fatalf("printing is not stable:\n%s\n---\n%s", printed, marshal(t, again))
		}
		for i, app := range again.Apps {
			if (cfg.Apps[i].AppKey != "") != (app.AppKey == "<secret>") || (cfg.Apps[i].Token != "") != (app.Token == "<secret>") {
				t.Fatalf("app %q: secrets not masked in the printed form", app.Name)
			}
		}
	})
}

// marshal prints cfg as YAML, secrets shown as "<secret>" (promconfig.Secret).
func marshal(t *testing.T, cfg *config.Config) string {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("printing the configuration: %v", err)
	}
	return string(b)
}
