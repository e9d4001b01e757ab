package validate

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// jobName is the scrape job of the exporter, as the rules expect it.
const jobName = "duix-exporter"

// base holds every object of the kustomize base, decoded strictly.
type base struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	serviceAccount *corev1.ServiceAccount
	configMaps     map[string]*corev1.ConfigMap
	secrets        map[string]*corev1.Secret
	serviceMonitor *monitoringv1.ServiceMonitor
	prometheusRule *monitoringv1.PrometheusRule
}

// strict decodes YAML into v; fields unknown to v's type are errors.
func strict(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	require.NoError(t, yaml.UnmarshalStrict(data, v), "%s does not decode strictly into %T", what, v)
}

// build runs kustomize on the base as `kubectl apply -k` would, and decodes
// each resulting object into its API type.
func build(t *testing.T) *base {
	t.Helper()
	return buildFS(t, filesys.MakeFsOnDisk(), filepath.Join(RepoRoot, "deploy", "kubernetes"))
}

func buildFS(t *testing.T, fs filesys.FileSystem, dir string) *base {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fs, dir)
	require.NoError(t, err, "kustomize build deploy/kubernetes")
	b := &base{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	seen := map[string]int{}
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		require.NoError(t, err)
		gvk := r.GetGvk()
		key := gvk.ApiVersion() + "/" + gvk.Kind
		seen[key]++
		what := key + " " + r.GetName()
		switch key {
		case "apps/v1/Deployment":
			b.deployment = new(appsv1.Deployment)
			strict(t, what, data, b.deployment)
		case "v1/Service":
			b.service = new(corev1.Service)
			strict(t, what, data, b.service)
		case "v1/ServiceAccount":
			b.serviceAccount = new(corev1.ServiceAccount)
			strict(t, what, data, b.serviceAccount)
		case "v1/ConfigMap":
			cm := new(corev1.ConfigMap)
			strict(t, what, data, cm)
			b.configMaps[cm.Name] = cm
		case "v1/Secret":
			s := new(corev1.Secret)
			strict(t, what, data, s)
			b.secrets[s.Name] = s
		case "monitoring.coreos.com/v1/ServiceMonitor":
			b.serviceMonitor = new(monitoringv1.ServiceMonitor)
			strict(t, what, data, b.serviceMonitor)
		case "monitoring.coreos.com/v1/PrometheusRule":
			b.prometheusRule = new(monitoringv1.PrometheusRule)
			strict(t, what, data, b.prometheusRule)
		default:
			t.Errorf("unexpected object in the base: %s", what)
		}
	}
	assert.Equal(t, map[string]int{
		"apps/v1/Deployment": 1,
		"v1/Service":         1,
		"v1/ServiceAccount":  1,
		"v1/ConfigMap":       2, // the configuration and the dashboard
		"v1/Secret":          1,
		"monitoring.coreos.com/v1/ServiceMonitor": 1,
		"monitoring.coreos.com/v1/PrometheusRule": 1,
	}, seen, "objects of the base")
	require.NotNil(t, b.deployment)
	require.NotNil(t, b.service)
	require.NotNil(t, b.serviceMonitor)
	require.NotNil(t, b.prometheusRule)
	return b
}

// buildExporter builds the exporter from the repository, once per test.
func buildExporter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "duix_exporter")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = RepoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the exporter:\n%s", out)
	return bin
}

func readRepo(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot, path))
	require.NoError(t, err)
	return b
}

// The source manifests decode strictly one by one too, so that an error
// names the file.
func TestSourceManifestsDecodeStrictly(t *testing.T) {
	dir := filepath.Join(RepoRoot, "deploy", "kubernetes")
	files := map[string]any{
		"deployment.yaml":        new(appsv1.Deployment),
		"service.yaml":           new(corev1.Service),
		"serviceaccount.yaml":    new(corev1.ServiceAccount),
		"secret.yaml":            new(corev1.Secret),
		"servicemonitor.yaml":    new(monitoringv1.ServiceMonitor),
		"prometheusrule.yaml":    new(monitoringv1.PrometheusRule),
		"grafana-dashboard.yaml": new(corev1.ConfigMap),
	}
	for name, v := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		strict(t, name, data, v)
	}
	// A typo is caught.
	var d appsv1.Deployment
	assert.Error(t, yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 1\n"), &d))
}

func TestDeploymentIsHardened(t *testing.T) {
	b := build(t)
	pod := b.deployment.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	psc := pod.SecurityContext
	require.NotNil(t, psc)
	assert.True(t, *psc.RunAsNonRoot, "pod runAsNonRoot")
	assert.NotZero(t, *psc.RunAsUser, "pod runs as a non-root UID")
	require.NotNil(t, psc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)

	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.False(t, *sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation")
	assert.False(t, *sc.Privileged, "privileged")
	assert.True(t, *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem")
	assert.True(t, *sc.RunAsNonRoot, "container runAsNonRoot")
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	require.NotNil(t, sc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	assert.False(t, *pod.AutomountServiceAccountToken, "no API token in the pod")
	assert.Equal(t, b.serviceAccount.Name, pod.ServiceAccountName)

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		assert.Contains(t, c.Resources.Requests, r, "resource request")
	}
	assert.Contains(t, c.Resources.Limits, corev1.ResourceMemory, "memory limit")

	require.Len(t, c.Ports, 1)
	port := c.Ports[0]
	assert.EqualValues(t, 9866, port.ContainerPort, "the exporter's default port")
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, "/-/healthy", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/-/ready", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, intstr.FromString(port.Name), c.LivenessProbe.HTTPGet.Port)
	assert.Equal(t, intstr.FromString(port.Name), c.ReadinessProbe.HTTPGet.Port)
	assert.Contains(t, c.Args, "--web.listen-address=:9866")
	assert.Regexp(t, `^ghcr\.io/duix-exporter/duix_exporter:`, c.Image)
}

// The image tag set by the kustomization is the version being released.
func TestImageTagIsTheVersion(t *testing.T) {
	b := build(t)
	version := strings.TrimSpace(string(readRepo(t, "VERSION")))
	assert.Equal(t, "ghcr.io/duix-exporter/duix_exporter:"+version, b.deployment.Spec.Template.Spec.Containers[0].Image)
}

// The configuration is a generated ConfigMap with a content hash in its
// name, referenced by the Deployment: a change rolls the pods out. It is
// a valid exporter configuration whose key files are the Secret's keys at
// the Secret's mount path.
func TestConfigMapIsAValidConfigAndRollsOut(t *testing.T) {
	b := build(t)
	pod := b.deployment.Spec.Template.Spec
	c := pod.Containers[0]

	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		assert.True(t, m.ReadOnly, "mount %s is read-only", m.Name)
		mounts[m.Name] = m.MountPath
	}
	var cm *corev1.ConfigMap
	var secret *corev1.Secret
	var configMount, keysMount string
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			cm = b.configMaps[v.ConfigMap.Name]
			require.NotNil(t, cm, "the Deployment mounts ConfigMap %s of the base", v.ConfigMap.Name)
			assert.Regexp(t, `^duix-exporter-config-[a-z0-9]{10}$`, cm.Name, "generated with a hash suffix")
			configMount = mounts[v.Name]
		case v.Secret != nil:
			secret = b.secrets[v.Secret.SecretName]
			require.NotNil(t, secret, "the Deployment mounts Secret %s of the base", v.Secret.SecretName)
			require.NotNil(t, v.Secret.DefaultMode)
			assert.EqualValues(t, 0o440, *v.Secret.DefaultMode, "keys readable by the pod's group only")
			keysMount = mounts[v.Name]
		}
	}
	require.NotNil(t, cm, "a configuration ConfigMap is mounted")
	require.NotNil(t, secret, "a Secret with the keys is mounted")
	require.NotEmpty(t, configMount)
	require.NotEmpty(t, keysMount)

	var configFile string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			configFile = v
		}
	}
	require.Equal(t, configMount, filepath.Dir(configFile), "--config.file is in the ConfigMap's mount")
	data, ok := cm.Data[filepath.Base(configFile)]
	require.True(t, ok, "the ConfigMap holds %s", filepath.Base(configFile))

	// Lay out the pod's files under a temporary root and load the
	// configuration as the exporter would.
	root := t.TempDir()
	keys := filepath.Join(root, keysMount)
	require.NoError(t, os.MkdirAll(keys, 0o755))
	for name, v := range secret.StringData {
		require.NoError(t, os.WriteFile(filepath.Join(keys, name), []byte(v), 0o600))
	}
	for name, v := range secret.Data {
		require.NoError(t, os.WriteFile(filepath.Join(keys, name), v, 0o600))
	}
	rooted := strings.ReplaceAll(data, keysMount+"/", keys+"/")
	path := filepath.Join(root, configFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(rooted), 0o600))
	bin := buildExporter(t)
	out, err := exec.Command(bin, "--config.check", "--config.file="+path).CombinedOutput()
	require.NoError(t, err, "the ConfigMap's %s is a valid configuration whose key files are in the Secret:\n%s", filepath.Base(configFile), out)

	var cfg struct {
		Apps []struct {
			Name       string `json:"name"`
			AppKeyFile string `json:"app_key_file"`
		} `json:"apps"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(data), &cfg))
	require.NotEmpty(t, cfg.Apps)
	used := map[string]bool{}
	for _, a := range cfg.Apps {
		require.NotEmpty(t, a.AppKeyFile, "app %s reads its key from the Secret", a.Name)
		assert.Equal(t, keysMount, filepath.Dir(a.AppKeyFile), "app %s reads its key from the Secret's mount", a.Name)
		used[filepath.Base(a.AppKeyFile)] = true
	}
	for name := range secret.StringData {
		assert.True(t, used[name], "Secret key %s is used by an app", name)
	}

	// A key file missing from the Secret is refused.
	require.NoError(t, os.Remove(filepath.Join(keys, filepath.Base(cfg.Apps[0].AppKeyFile))))
	out, err = exec.Command(bin, "--config.check", "--config.file="+path).CombinedOutput()
	assert.Error(t, err, "--config.check without a key file:\n%s", out)

	// The same configuration keeps its name; a changed one gets another
	// name, which the Deployment follows.
	assert.Contains(t, build(t).configMaps, cm.Name, "the name is stable for the same content")
	fs := filesys.MakeFsInMemory()
	dir := filepath.Join(RepoRoot, "deploy", "kubernetes")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		content, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		if e.Name() == filepath.Base(configFile) {
			content = append(content, []byte("# edited\n")...)
		}
		require.NoError(t, fs.WriteFile(filepath.Join("/base", e.Name()), content))
	}
	edited := buildFS(t, fs, "/base")
	var newName string
	for _, v := range edited.deployment.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, "duix-exporter-config-") {
			newName = v.ConfigMap.Name
		}
	}
	assert.Contains(t, edited.configMaps, newName)
	assert.NotEqual(t, cm.Name, newName, "an edited configuration changes the pod template")
}

// Service, ServiceMonitor and rules agree on the port and the job name.
func TestScrapeWiring(t *testing.T) {
	b := build(t)
	c := b.deployment.Spec.Template.Spec.Containers[0]
	sel := b.service.Spec.Selector
	for k, v := range sel {
		assert.Equal(t, v, b.deployment.Spec.Template.Labels[k], "the Service selects the pods")
	}
	require.Len(t, b.service.Spec.Ports, 1)
	sp := b.service.Spec.Ports[0]
	assert.Equal(t, intstr.FromString(c.Ports[0].Name), sp.TargetPort)

	sm := b.serviceMonitor.Spec
	for k, v := range sm.Selector.MatchLabels {
		assert.Equal(t, v, b.service.Labels[k], "the ServiceMonitor selects the Service")
	}
	require.Len(t, sm.Endpoints, 1)
	assert.Equal(t, sp.Name, sm.Endpoints[0].Port)
	assert.Equal(t, "/metrics", sm.Endpoints[0].Path)
	require.NotEmpty(t, sm.JobLabel)
	assert.Equal(t, jobName, b.service.Labels[sm.JobLabel], "job label of the scraped series")

	rules := string(readRepo(t, RulesFile))
	assert.Contains(t, rules, `up{job="`+jobName+`"} == 0`)
	assert.Contains(t, rules, `absent(up{job="`+jobName+`"})`)
	promConfig := string(readRepo(t, "deploy/prometheus/prometheus.yml"))
	assert.Contains(t, promConfig, "job_name: "+jobName)
}

// The PrometheusRule carries exactly the rules of rules.yml, and is what
// the generator makes of it.
func TestPrometheusRuleIsRulesYML(t *testing.T) {
	src := readRepo(t, RulesFile)
	var want monitoringv1.PrometheusRuleSpec
	strict(t, RulesFile, src, &want)
	require.NotEmpty(t, want.Groups)

	b := build(t)
	assert.Equal(t, want, b.prometheusRule.Spec, "the PrometheusRule's spec is rules.yml")
	assert.Equal(t, string(PrometheusRule(src)), string(readRepo(t, PrometheusRuleFile)),
		"%s is stale: run `make mixin`", PrometheusRuleFile)

	// Every alert has what the runbooks and the routing need.
	anchors := runbookAnchors(t)
	for _, g := range want.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			assert.Contains(t, []string{"info", "warning", "critical"}, r.Labels["severity"], "%s: severity", r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
			assert.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
			url := r.Annotations["runbook_url"]
			anchor := strings.ToLower(r.Alert)
			assert.Equal(t, "https://github.com/duix-exporter/duix_exporter/blob/main/"+RunbooksFile+"#"+anchor, url, "%s: runbook_url", r.Alert)
			if anchors != nil {
				assert.True(t, anchors[anchor], "%s: %s has a section #%s", r.Alert, RunbooksFile, anchor)
			}
		}
	}
}

// runbookAnchors returns the anchors of the headings of the runbooks, or
// nil (and logs it) while the repository has no runbooks file.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot, RunbooksFile))
	if errors.Is(err, fs.ErrNotExist) {
		t.Logf("%s does not exist: the runbook anchors are not checked", RunbooksFile)
		return nil
	}
	require.NoError(t, err)
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	strip := regexp.MustCompile("[^a-z0-9 _-]")
	for sc.Scan() {
		h := strings.TrimLeft(sc.Text(), "#")
		if len(h) == len(sc.Text()) || !strings.HasPrefix(h, " ") {
			continue // not a heading
		}
		a := strip.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
		out[strings.ReplaceAll(a, " ", "-")] = true
	}
	return out
}

// The dashboard ConfigMap carries the dashboards of dashboards/ as they
// are, labelled for Grafana's sidecar, and is what the generator makes of
// them. It stays small enough for `kubectl apply`, which copies it into an
// annotation limited to 256 KiB.
func TestDashboardConfigMapIsTheDashboards(t *testing.T) {
	b := build(t)
	cm := b.configMaps["duix-exporter-dashboard"]
	require.NotNil(t, cm, "the dashboard ConfigMap keeps its name (no hash suffix)")
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
	srcs := make([][]byte, len(Dashboards))
	for i, name := range Dashboards {
		srcs[i] = readRepo(t, DashboardsDir+"/"+name)
		assert.Equal(t, string(srcs[i]), cm.Data[name], "the ConfigMap holds %s", name)
	}
	assert.Len(t, cm.Data, len(Dashboards), "the ConfigMap holds the dashboards only")
	manifest := readRepo(t, DashboardCMFile)
	assert.Equal(t, string(DashboardConfigMap(Dashboards, srcs)), string(manifest),
		"%s is stale: run `make mixin`", DashboardCMFile)
	assert.Less(t, len(manifest), 256<<10, "%s fits in kubectl's last-applied annotation", DashboardCMFile)
	entries, err := os.ReadDir(filepath.Join(RepoRoot, DashboardsDir))
	require.NoError(t, err)
	var onDisk []string
	for _, e := range entries {
		onDisk = append(onDisk, e.Name())
	}
	assert.ElementsMatch(t, Dashboards, onDisk, "every dashboard of %s is in the ConfigMap", DashboardsDir)
}

// The Dockerfile builds with the Go version of go.mod, runs as a non-root
// user and exposes the exporter's port.
func TestDockerfile(t *testing.T) {
	df := string(readRepo(t, "Dockerfile"))
	gomod := string(readRepo(t, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(gomod)
	require.NotNil(t, goVersion)
	assert.Regexp(t, `(?m)^ARG GO_VERSION=`+regexp.QuoteMeta(goVersion[1])+`\b`, df, "builder image matches go.mod")
	stages := regexp.MustCompile(`(?m)^FROM `).FindAllStringIndex(df, -1)
	require.GreaterOrEqual(t, len(stages), 2, "multi-stage")
	final := df[stages[len(stages)-1][0]:]
	assert.Regexp(t, `^FROM (scratch|gcr\.io/distroless/static)`, final)
	assert.Regexp(t, `(?m)^USER [1-9][0-9]*:[1-9][0-9]*$`, final, "numeric non-root user")
	assert.Regexp(t, `(?m)^EXPOSE 9866$`, final)
	assert.Contains(t, df, "CGO_ENABLED=0", "static binary")
}
