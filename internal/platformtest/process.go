package platformtest

// Child processes of the tests and of the benchmark commands: the
// exporter's binary, Prometheus, Alertmanager.

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Process is a started child process. What it writes to its standard
// output and error goes to Out, unless its command sent them elsewhere.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	Out  Buffer
	done chan struct{} // closed once it has exited and been waited for
	err  error         // Wait's error, once done is closed
}

// StartProcess starts cmd, named name in messages.
func StartProcess(name string, cmd *exec.Cmd) (*Process, error) {
	p := &Process{Name: name, Cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.Out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.Out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// StartTestProcess starts bin with args, waits (at most a minute) until
// readyURL answers 200 OK, and stops the process (see Stop) when the test
// ends.
func StartTestProcess(tb testing.TB, name, readyURL, bin string, args ...string) *Process {
	tb.Helper()
	p, err := StartProcess(name, exec.Command(bin, args...)) // #nosec G204 -- a binary the test drives
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	if err := p.WaitReady(context.Background(), readyURL, time.Minute); err != nil {
		tb.Fatal(err)
	}
	return p
}

// StartPrometheus starts the Prometheus binary bin with the configuration
// file cfg, its data in a temporary directory and its API on a free
// loopback port, as StartTestProcess does. It returns the process and the
// API's base URL.
func StartPrometheus(tb testing.TB, bin, cfg string) (*Process, string) {
	tb.Helper()
	addr := FreeAddr(tb)
	p := StartTestProcess(tb, "prometheus", "http://"+addr+"/-/ready", bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(tb.TempDir(), "tsdb"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	return p, "http://" + addr
}

// Done is closed once the process has exited; Err then returns Wait's
// error.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns Wait's error once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop ends the process with SIGTERM, then SIGKILL if it has not exited
// after grace, and returns Wait's error (nil for a clean exit). It may be
// called more than once.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

// WaitReady waits until url answers 200 OK, at most limit; it fails when
// the process exits first or ctx ends.
func (p *Process) WaitReady(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, p.Out.String())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s after %s: %w\n%s", p.Name, url, limit, ctx.Err(), p.Out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
