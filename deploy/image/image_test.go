//go:build image

// Package image tests the container image that `make image-oci` builds
// with crane: it loads the image into podman, runs it in demo mode as the
// Helm chart runs the pod (read-only root, no capability, no new
// privileges), scrapes it, and checks its user and labels. `make
// image-test` builds the image and runs these tests with the tag image.
package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// What `make image-test` passes: the image's reference, the directory
// image-oci wrote it to, and the version and revision it was built from.
type build struct {
	ref, dir, version, revision string
}

func imageBuild(t *testing.T) build {
	t.Helper()
	b := build{
		ref:      os.Getenv("DUIX_IMAGE"),
		dir:      os.Getenv("DUIX_IMAGE_DIR"),
		version:  os.Getenv("DUIX_IMAGE_VERSION"),
		revision: os.Getenv("DUIX_IMAGE_REVISION"),
	}
	if b.ref == "" || b.dir == "" || b.version == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DUIX_IMAGE, DUIX_IMAGE_DIR and DUIX_IMAGE_VERSION are not set (CI=true): run `make image-test`, which builds the image and sets them")
		}
		t.Skip("DUIX_IMAGE, DUIX_IMAGE_DIR and DUIX_IMAGE_VERSION are not set: `make image-test` builds the image and runs this test")
	}
	return b
}

// podman runs podman on a store of the test's own (vfs, so that no
// overlay mount is needed), never touching the machine's images.
type podman struct {
	bin   string
	flags []string
}

// ulimits are given explicitly: podman's defaults for rootful containers
// (1048576 open files and processes) are above what some sandboxes let a
// process set, and runc then fails with "error setting rlimits".
var ulimits = []string{"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}

func newPodman(t *testing.T) *podman {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("podman is not installed (CI=true): `make test-deps` installs it with runc")
		}
		t.Skip("no container runtime: podman is not installed, so the image is not run (`make test-deps` installs podman and runc)")
	}
	dir := t.TempDir()
	return &podman{bin: bin, flags: []string{
		"--root", filepath.Join(dir, "root"),
		"--runroot", filepath.Join(dir, "run"),
		"--storage-driver", "vfs",
		"--cgroup-manager", "cgroupfs",
		"--events-backend", "file",
		"--tmpdir", filepath.Join(dir, "tmp"),
	}}
}

// run runs podman with args and returns its standard output, and its
// error output in the error.
func (p *podman) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, append(slices.Clone(p.flags), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// canRun checks that podman can run a container at all on this machine,
// apart from the image under test: a rootfs holding only a static probe
// program. When it cannot (no user namespaces, no cgroups, a sandbox that
// refuses mounts), the test is skipped with podman's reason.
func (p *podman) canRun(t *testing.T) {
	t.Helper()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	require.NoError(t, os.MkdirAll(rootfs, 0o755))
	build := exec.Command("go", "build", "-o", filepath.Join(rootfs, "probe"), "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the probe: %s", out)
	got, err := p.run(append(append([]string{"run", "--rm", "--network", "none"}, ulimits...), "--rootfs", rootfs, "/probe")...)
	if err != nil {
		t.Skipf("no container runtime can run here, so the image is not run: podman could not run a static program from a plain rootfs: %v", err)
	}
	require.Equal(t, "probe ok\n", got)
}

// imageConfig is what `podman image inspect` tells of an image.
type imageConfig struct {
	ID           string `json:"Id"`
	Architecture string
	Os           string
	Config       struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		WorkingDir   string
		ExposedPorts map[string]struct{}
		Labels       map[string]string
	}
}

func TestImage(t *testing.T) {
	b := imageBuild(t)
	p := newPodman(t)
	p.canRun(t)

	out, err := p.run("load", "--input", filepath.Join(b.dir, "image.tar"))
	require.NoError(t, err)
	assert.Contains(t, out, "Loaded image: "+b.ref, "the tarball is named as the image")

	// The image as built: non-root, labelled, the exporter as entrypoint.
	out, err = p.run("image", "inspect", b.ref)
	require.NoError(t, err)
	var images []imageConfig
	require.NoError(t, json.Unmarshal([]byte(out), &images))
	require.Len(t, images, 1)
	img := images[0]
	assert.Equal(t, "linux", img.Os)
	assert.Equal(t, runtime.GOARCH, img.Architecture)
	cfg := img.Config
	uid := assertNonRootUser(t, cfg.User)
	assert.Equal(t, []string{"/bin/duix_exporter"}, cfg.Entrypoint)
	assert.Equal(t, []string{"--config.file=/etc/duix_exporter/duix.yml"}, cfg.Cmd)
	assert.Equal(t, "/", cfg.WorkingDir)
	assert.Contains(t, cfg.ExposedPorts, "9866/tcp", "the exporter's port is exposed")
	assert.Equal(t, b.version, cfg.Labels["org.opencontainers.image.version"], "the version label")
	if b.revision != "" {
		assert.Equal(t, b.revision, cfg.Labels["org.opencontainers.image.revision"], "the revision label")
	}
	assert.Equal(t, "https://github.com/duix-exporter/duix_exporter", cfg.Labels["org.opencontainers.image.source"])
	assertLayoutIsTheImage(t, b.dir, img.ID)

	// Run as the chart runs the pod, on a port of loopback of its own.
	addr := platformtest.FreeAddr(t)
	name := fmt.Sprintf("duix-image-test-%d", os.Getpid())
	args := append([]string{"run", "--detach", "--name", name, "--network", "host",
		"--read-only", "--cap-drop", "all", "--security-opt", "no-new-privileges"}, ulimits...)
	args = append(args, b.ref, "--demo", "--web.listen-address="+addr)
	_, err = p.run(args...)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			if logs, err := p.run("logs", name); err == nil {
				t.Logf("container log:\n%s", logs)
			}
		}
		_, _ = p.run("rm", "--force", "--time", "1", name)
	})

	families := scrapeUntilUp(t, "http://"+addr+"/metrics")
	_, demoApps := simulator.NewDemo()
	require.NotEmpty(t, demoApps)
	up := map[string]float64{}
	for _, m := range families["duix_up"].GetMetric() {
		up[label(m, "app")] = m.GetGauge().GetValue()
	}
	for _, a := range demoApps {
		assert.Equal(t, 1.0, up[a.Name], "duix_up{app=%q} 1", a.Name)
	}
	assert.Len(t, up, len(demoApps), "one duix_up per demo app")
	info := families["duix_exporter_build_info"].GetMetric()
	require.Len(t, info, 1, "duix_exporter_build_info")
	assert.Equal(t, b.version, label(info[0], "version"), "the binary in the image is the version built")

	// The process runs as the image's user, with no capability.
	out, err = p.run("top", name, "user", "group", "capeff")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "one process in the container:\n%s", out)
	fields := strings.Fields(lines[1])
	require.Len(t, fields, 3, "user, group, capabilities: %q", lines[1])
	assert.Equal(t, "nonroot", fields[0], "the process runs as user nonroot (/etc/passwd of the image)")
	assert.Equal(t, "nonroot", fields[1])
	assert.Equal(t, "none", fields[2], "no capability")
	out, err = p.run("inspect", "--format", "{{.State.Pid}}", name)
	require.NoError(t, err)
	if status, err := os.ReadFile("/proc/" + strings.TrimSpace(out) + "/status"); err == nil && os.Getuid() == 0 {
		// Rootful podman: the host sees the container's UID as it is.
		assert.Regexp(t, fmt.Sprintf(`(?m)^Uid:\s+%d\s+%d\s+%d\s+%d$`, uid, uid, uid, uid), string(status))
	}

	// SIGTERM ends it at once, cleanly.
	_, err = p.run("stop", "--time", "10", name)
	require.NoError(t, err)
	out, err = p.run("inspect", "--format", "{{.State.ExitCode}}", name)
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(out), "exit code after SIGTERM")
}

// assertNonRootUser checks an image's User (uid[:gid], numeric, so that
// Kubernetes' runAsNonRoot can verify it) and returns the UID.
func assertNonRootUser(t *testing.T, user string) int {
	t.Helper()
	uidText, gidText, _ := strings.Cut(user, ":")
	uid, err := strconv.Atoi(uidText)
	require.NoError(t, err, "the image's user %q is numeric", user)
	assert.NotZero(t, uid, "the image does not run as root")
	if gidText != "" {
		gid, err := strconv.Atoi(gidText)
		require.NoError(t, err, "the image's group %q is numeric", user)
		assert.NotZero(t, gid, "the image's group is not root")
	}
	return uid
}

// assertLayoutIsTheImage checks that the OCI layout next to the tarball
// holds the same image: its one manifest is the digest image-oci printed,
// and that manifest's configuration is the loaded image (podman's image ID
// is the digest of the configuration).
func assertLayoutIsTheImage(t *testing.T, dir, imageID string) {
	t.Helper()
	digest, err := os.ReadFile(filepath.Join(dir, "digest"))
	require.NoError(t, err)
	var index struct {
		Manifests []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"manifests"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "oci", "index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &index))
	require.Len(t, index.Manifests, 1)
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", index.Manifests[0].MediaType)
	assert.Equal(t, strings.TrimSpace(string(digest)), index.Manifests[0].Digest)
	var manifest struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
		Annotations map[string]string `json:"annotations"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "oci", "blobs", "sha256", strings.TrimPrefix(index.Manifests[0].Digest, "sha256:")))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &manifest))
	assert.Equal(t, "sha256:"+imageID, manifest.Config.Digest, "the OCI layout and the tarball hold the same image")
	assert.NotEmpty(t, manifest.Annotations["org.opencontainers.image.version"], "the manifest is annotated with the version")
}

// scrapeUntilUp scrapes url until it answers with duix_up samples, within
// a bound that only a broken container reaches: the exporter answers
// within a second of its start.
func scrapeUntilUp(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		families, err := scrape(client, url)
		if err == nil && len(families["duix_up"].GetMetric()) > 0 {
			return families
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	require.FailNow(t, "the container never served duix_up", "%s: %v", url, last)
	return nil
}

func scrape(client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
