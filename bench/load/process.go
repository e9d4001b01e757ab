//go:build linux

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
)

// startChild starts bin with args, logging JSON lines to stderr, and
// waits (at most a minute) for a log line with the message msg; it returns
// the string value of key in it.
func startChild(ctx context.Context, bin string, args []string, msg, key string) (*platformtest.Process, string, error) {
	cmd := exec.Command(bin, args...)                                  // #nosec G204 -- the binary under test is the harness's own input
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // it dies with the harness
	// As shipped: the garbage collector at Go's defaults, whatever the
	// harness's own environment says.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=")
	})
	stderr, w := io.Pipe()
	cmd.Stderr = w
	c, err := platformtest.StartProcess(filepath.Base(bin)+" "+args[0], cmd)
	if err != nil {
		return nil, "", err
	}
	go func() {
		<-c.Done()
		_ = w.Close()
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = fmt.Fprintf(&c.Out, "%s\n", sc.Bytes())
			if v, ok := logValue(sc.Bytes(), msg, key); ok {
				select {
				case found <- v:
				default:
				}
			}
		}
		_, _ = io.Copy(&c.Out, stderr) // after a line too long for the scanner
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case v := <-found:
		return c, v, nil
	case <-c.Done():
		err = errors.New("exited")
	case <-timer.C:
		err = fmt.Errorf("no %q logged within a minute", msg)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = c.Stop(10 * time.Second)
	return nil, "", fmt.Errorf("%s: %w\n%s", c.Name, err, c.Out.String())
}

// logValue returns the string value of key in a JSON log line whose msg
// is msg.
func logValue(line []byte, msg, key string) (string, bool) {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil || m["msg"] != msg {
		return "", false
	}
	v, ok := m[key].(string)
	return v, ok
}

func buildBinary(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run from the module (go env GOMOD: %v), or give -binary", err)
	}
	bin := filepath.Join(dir, "duix_exporter")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".") // #nosec G204 -- a path in our own temporary directory
	build.Dir = filepath.Dir(mod)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the exporter: %w", err)
	}
	return bin, nil
}

// platform is a simulator process serving generated apps and an exporter
// process configured for them.
type platform struct {
	sim, exp *platformtest.Process
	base     string // the simulator's API
	metrics  string // the simulator's own metrics
	exporter string // the exporter's address
	http     *http.Client
}

// startPlatform starts both processes, with the configuration and key
// files the simulator writes in dir, and waits until the exporter is ready.
func startPlatform(ctx context.Context, bin, dir string, o options, apps, conversations int) (_ *platform, err error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	p := &platform{http: &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}}}
	defer func() {
		if err != nil {
			p.stop()
		}
	}()
	cfg := filepath.Join(dir, "duix.yml")
	p.sim, p.base, err = startChild(ctx, bin, []string{"simulator", "--log.format=json",
		"--simulator.listen-address=127.0.0.1:0", "--simulator.churn=0",
		"--simulator.latency=" + o.latency.String(), "--simulator.apps=" + strconv.Itoa(apps),
		"--simulator.sessions=" + strconv.Itoa(o.sessions), "--simulator.conversations=" + strconv.Itoa(conversations),
		"--simulator.write-config=" + cfg}, "Simulator serving", "base_url")
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(p.base)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
		return nil, fmt.Errorf("the simulator serves at %q, not on 127.0.0.1", p.base)
	}
	p.metrics = "http://" + u.Host + "/metrics"

	b, err := os.ReadFile(cfg) // #nosec G304 -- written by the simulator in our own temporary directory
	if err != nil {
		return nil, err
	}
	withC := bytes.Replace(b, []byte("\napi:\n"), fmt.Appendf(nil, "\nsessions:\n  lifecycle: %t\napi:\n  max_concurrency: %d\n", o.lifecycle, o.concurrency), 1)
	if bytes.Equal(withC, b) {
		return nil, errors.New("the configuration written by the simulator has no api section")
	}
	if err := os.WriteFile(cfg, withC, 0o600); err != nil { // #nosec G703 -- a file in our own temporary directory
		return nil, err
	}

	var addr string
	p.exp, addr, err = startChild(ctx, bin, []string{"--config.file=" + cfg, "--web.listen-address=127.0.0.1:0",
		"--log.format=json", "--log.level=info", "--web.max-requests=0"}, "Listening on", "address")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		return nil, fmt.Errorf("the exporter listens on %q, not on 127.0.0.1", addr)
	}
	p.exporter = "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if _, _, err := p.get(ctx, time.Second, p.exporter+"/-/ready", nil); err == nil {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("the exporter did not become ready\n%s", p.exp.Out.String())
}

func (p *platform) stop() {
	for _, c := range []*platformtest.Process{p.exp, p.sim} {
		if c != nil {
			_ = c.Stop(10 * time.Second)
		}
	}
}

// get fetches url with the headers h within timeout, and returns the body
// of an HTTP 200 answer, uncompressed.
func (p *platform) get(ctx context.Context, timeout time.Duration, url string, h http.Header) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		// Uncompressed as it arrives, as Prometheus does.
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, nil, err
		}
		r = zr
	}
	body, err := io.ReadAll(r)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return body, resp.Header, err
}

// prometheusAccept is what Prometheus 3 sends when scraping.
const prometheusAccept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

// scrapeUp scrapes /metrics as Prometheus does (see scrape), checks that
// every one of apps is up, and returns the body uncompressed.
func (p *platform) scrapeUp(ctx context.Context, apps int) ([]byte, error) {
	body, err := p.scrape(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkUp(body, apps); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, p.exp.Out.String())
	}
	return body, nil
}

// scrape scrapes /metrics as Prometheus does (gzip, its Accept header and
// scrape timeout), and returns the body uncompressed: what Prometheus
// counts in a scrape's duration.
func (p *platform) scrape(ctx context.Context) ([]byte, error) {
	body, _, err := p.get(ctx, scrapeTimeout, p.exporter+"/metrics", http.Header{
		"Accept":                              {prometheusAccept},
		"Accept-Encoding":                     {"gzip"},
		"X-Prometheus-Scrape-Timeout-Seconds": {strconv.Itoa(int(scrapeTimeout.Seconds()))},
	})
	if err != nil {
		return nil, fmt.Errorf("scrape: %w\n%s", err, p.exp.Out.String())
	}
	return body, nil
}

// callsOf returns the requests that reached the simulator during n
// simultaneous scrapes.
func (p *platform) callsOf(ctx context.Context, n, apps int) (int64, error) {
	before, err := p.calls(ctx)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Go(func() { _, errs[i] = p.scrapeUp(ctx, apps) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	after, err := p.calls(ctx)
	return after - before, err
}

// calls is the number of requests that reached the simulator so far.
func (p *platform) calls(ctx context.Context) (int64, error) {
	body, _, err := p.get(ctx, time.Minute, p.metrics, nil)
	if err != nil {
		return 0, err
	}
	return sumCalls(body)
}

// sumCalls adds up duix_simulator_requests_total over its endpoints.
func sumCalls(body []byte) (int64, error) {
	var n int64
	found := false
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("duix_simulator_requests_total{")) {
			continue
		}
		v, err := strconv.ParseFloat(string(line[bytes.LastIndexByte(line, ' ')+1:]), 64)
		if err != nil {
			return 0, fmt.Errorf("simulator metrics: %w", err)
		}
		n, found = n+int64(v), true
	}
	if !found {
		return 0, errors.New("simulator metrics: no duix_simulator_requests_total")
	}
	return n, nil
}
