package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/duix-exporter/duix_exporter/config"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// jobName is the scrape job of the exporter, as the rules expect it.
const jobName = "duix-exporter"

// objects holds every object of a rendering (the kustomize base, or the
// Helm chart), decoded strictly.
type objects struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	serviceAccount *corev1.ServiceAccount
	configMaps     map[string]*corev1.ConfigMap
	secrets        map[string]*corev1.Secret
	serviceMonitor *monitoringv1.ServiceMonitor
	prometheusRule *monitoringv1.PrometheusRule
	// serviceMonitors holds every ServiceMonitor by name; serviceMonitor
	// is the first (the exporter's /metrics).
	serviceMonitors map[string]*monitoringv1.ServiceMonitor
	pods            map[string]*corev1.Pod
	pdb             *policyv1.PodDisruptionBudget
	networkPolicy   *networkingv1.NetworkPolicy
	// seen counts the objects by apiVersion/kind.
	seen map[string]int
}

func newObjects() *objects {
	return &objects{
		configMaps: map[string]*corev1.ConfigMap{},
		secrets:    map[string]*corev1.Secret{},
		seen:       map[string]int{},

		serviceMonitors: map[string]*monitoringv1.ServiceMonitor{},
		pods:            map[string]*corev1.Pod{},
	}
}

// strict decodes YAML into v; fields unknown to v's type are errors.
func strict(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	require.NoError(t, yaml.UnmarshalStrict(data, v), "%s does not decode strictly into %T", what, v)
}

// decode decodes YAML strictly into a new T.
func decode[T any](t *testing.T, what string, data []byte) *T {
	t.Helper()
	v := new(T)
	strict(t, what, data, v)
	return v
}

// add decodes one object strictly into its API type; src names where it
// comes from in the messages.
func (o *objects) add(t *testing.T, src string, data []byte) {
	t.Helper()
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	require.NoError(t, yaml.Unmarshal(data, &meta), "%s: an object", src)
	key := meta.APIVersion + "/" + meta.Kind
	o.seen[key]++
	what := src + ": " + key + " " + meta.Metadata.Name
	switch key {
	case "apps/v1/Deployment":
		o.deployment = decode[appsv1.Deployment](t, what, data)
	case "v1/Service":
		o.service = decode[corev1.Service](t, what, data)
	case "v1/ServiceAccount":
		o.serviceAccount = decode[corev1.ServiceAccount](t, what, data)
	case "v1/ConfigMap":
		cm := decode[corev1.ConfigMap](t, what, data)
		o.configMaps[cm.Name] = cm
	case "v1/Secret":
		s := decode[corev1.Secret](t, what, data)
		o.secrets[s.Name] = s
	case "monitoring.coreos.com/v1/ServiceMonitor":
		sm := decode[monitoringv1.ServiceMonitor](t, what, data)
		if o.serviceMonitor == nil {
			o.serviceMonitor = sm
		}
		o.serviceMonitors[sm.Name] = sm
	case "v1/Pod":
		pod := decode[corev1.Pod](t, what, data)
		o.pods[pod.Name] = pod
	case "policy/v1/PodDisruptionBudget":
		o.pdb = decode[policyv1.PodDisruptionBudget](t, what, data)
	case "networking.k8s.io/v1/NetworkPolicy":
		o.networkPolicy = decode[networkingv1.NetworkPolicy](t, what, data)
	case "monitoring.coreos.com/v1/PrometheusRule":
		o.prometheusRule = decode[monitoringv1.PrometheusRule](t, what, data)
	default:
		t.Errorf("unexpected object: %s", what)
	}
}

// build runs kustomize on the base as `kubectl apply -k` would, and decodes
// each resulting object into its API type.
func build(t *testing.T) *objects {
	t.Helper()
	return buildFS(t, filesys.MakeFsOnDisk(), filepath.Join(RepoRoot, "deploy", "kubernetes"))
}

func buildFS(t *testing.T, fs filesys.FileSystem, dir string) *objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fs, dir)
	require.NoError(t, err, "kustomize build deploy/kubernetes")
	b := newObjects()
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		require.NoError(t, err)
		b.add(t, "kustomize build", data)
	}
	// No Secret: the user makes the keys' Secret (docs/deploy.md).
	assert.Equal(t, map[string]int{
		"apps/v1/Deployment": 1,
		"v1/Service":         1,
		"v1/ServiceAccount":  1,
		"v1/ConfigMap":       2, // the configuration and the dashboard
		"monitoring.coreos.com/v1/ServiceMonitor": 1,
		"monitoring.coreos.com/v1/PrometheusRule": 1,
	}, b.seen, "objects of the base")
	require.NotNil(t, b.deployment)
	require.NotNil(t, b.service)
	require.NotNil(t, b.serviceMonitor)
	require.NotNil(t, b.prometheusRule)
	return b
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

// assertHardened checks the pod of d: non-root, read-only root filesystem,
// no privilege, every capability dropped, seccomp RuntimeDefault, no API
// token, resources, probes on the exporter's port and a GOMEMLIMIT in step
// with the memory limit.
func assertHardened(t *testing.T, o *objects) {
	t.Helper()
	require.NotNil(t, o.deployment)
	pod := o.deployment.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	psc := pod.SecurityContext
	require.NotNil(t, psc)
	require.NotNil(t, psc.RunAsNonRoot)
	assert.True(t, *psc.RunAsNonRoot, "pod runAsNonRoot")
	require.NotNil(t, psc.RunAsUser)
	assert.NotZero(t, *psc.RunAsUser, "pod runs as a non-root UID")
	require.NotNil(t, psc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)

	sc := c.SecurityContext
	require.NotNil(t, sc)
	for name, v := range map[string]*bool{
		"allowPrivilegeEscalation": sc.AllowPrivilegeEscalation,
		"privileged":               sc.Privileged,
		"readOnlyRootFilesystem":   sc.ReadOnlyRootFilesystem,
		"runAsNonRoot":             sc.RunAsNonRoot,
	} {
		require.NotNil(t, v, "container securityContext.%s is set", name)
	}
	assert.False(t, *sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation")
	assert.False(t, *sc.Privileged, "privileged")
	assert.True(t, *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem")
	assert.True(t, *sc.RunAsNonRoot, "container runAsNonRoot")
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	require.NotNil(t, sc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	require.NotNil(t, pod.AutomountServiceAccountToken)
	assert.False(t, *pod.AutomountServiceAccountToken, "no API token in the pod")
	require.NotNil(t, o.serviceAccount)
	assert.Equal(t, o.serviceAccount.Name, pod.ServiceAccountName)

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		assert.Contains(t, c.Resources.Requests, r, "resource request")
	}
	assert.Contains(t, c.Resources.Limits, corev1.ResourceMemory, "memory limit")
	assertGoMemLimit(t, c)

	port := c.Ports[0]
	assert.Equal(t, "http-metrics", port.Name, "the metrics port comes first")
	assert.EqualValues(t, 9866, port.ContainerPort, "the exporter's default port")
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, "%s probe", name)
		switch {
		case p.HTTPGet != nil:
			assert.Equal(t, map[string]string{"liveness": "/-/healthy", "readiness": "/-/ready"}[name], p.HTTPGet.Path, "%s probe path", name)
			assert.Equal(t, intstr.FromString(port.Name), p.HTTPGet.Port, "%s probe port", name)
		case p.TCPSocket != nil:
			assert.Equal(t, intstr.FromString(port.Name), p.TCPSocket.Port, "%s probe port", name)
		default:
			t.Errorf("%s probe: neither httpGet nor tcpSocket on the metrics port", name)
		}
	}
	assert.Contains(t, c.Args, "--web.listen-address=:9866")
	for _, m := range c.VolumeMounts {
		assert.True(t, m.ReadOnly, "mount %s is read-only", m.Name)
	}
}

// assertGoMemLimit checks that the container's GOMEMLIMIT is about 90% of
// its memory limit: low enough for the Go runtime to collect before the
// kernel kills the container, high enough not to collect all the time.
func assertGoMemLimit(t *testing.T, c corev1.Container) {
	t.Helper()
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	require.True(t, ok, "memory limit")
	var env *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "GOMEMLIMIT" {
			env = &c.Env[i]
		}
	}
	require.NotNil(t, env, "GOMEMLIMIT is set")
	require.Nil(t, env.ValueFrom, "GOMEMLIMIT is a value: resourceFieldRef would give the whole limit")
	soft, err := parseGoMemLimit(env.Value)
	require.NoError(t, err)
	ratio := float64(soft) / float64(limit.Value())
	assert.InDelta(t, 0.9, ratio, 0.05, "GOMEMLIMIT %s is about 90%% of the memory limit %s", env.Value, limit.String())
}

// parseGoMemLimit parses a GOMEMLIMIT value as the Go runtime does: a
// number of bytes with an optional suffix B, KiB, MiB, GiB or TiB.
func parseGoMemLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		size   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	size := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, size = n, u.size
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("GOMEMLIMIT %q: not a size", s)
	}
	return n * size, nil
}

func TestDeploymentIsHardened(t *testing.T) {
	b := build(t)
	assertHardened(t, b)
	assert.Regexp(t, `^ghcr\.io/duix-exporter/duix_exporter:`, b.deployment.Spec.Template.Spec.Containers[0].Image)
}

// The image tag set by the kustomization is the version being released.
func TestImageTagIsTheVersion(t *testing.T) {
	b := build(t)
	version := strings.TrimSpace(string(readRepo(t, "VERSION")))
	assert.Equal(t, "ghcr.io/duix-exporter/duix_exporter:"+version, b.deployment.Spec.Template.Spec.Containers[0].Image)
}

// podFiles is what the exporter's container sees of its configuration and
// keys.
type podFiles struct {
	configFile string          // --config.file
	config     string          // its content
	keysMount  string          // where the keys' Secret is mounted
	keys       map[string]bool // the key files the Secret's volume shows
	secretName string          // the Secret mounted
}

// configFiles returns the pod's configuration file and the directory and
// Secret of its keys, from the Deployment's mounts and the ConfigMaps of o.
func configFiles(t *testing.T, o *objects) podFiles {
	t.Helper()
	pod := o.deployment.Spec.Template.Spec
	c := pod.Containers[0]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var f podFiles
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			f.configFile = v
		}
	}
	require.NotEmpty(t, f.configFile, "--config.file is given")
	var cm *corev1.ConfigMap
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil && mounts[v.Name] == filepath.Dir(f.configFile):
			cm = o.configMaps[v.ConfigMap.Name]
			require.NotNil(t, cm, "the Deployment mounts ConfigMap %s of the same rendering", v.ConfigMap.Name)
		case v.Secret != nil && mounts[v.Name] != "" && v.Name == "keys":
			require.NotNil(t, v.Secret.DefaultMode)
			assert.EqualValues(t, 0o440, *v.Secret.DefaultMode, "keys readable by the pod's group only")
			f.keysMount = mounts[v.Name]
			f.secretName = v.Secret.SecretName
			f.keys = map[string]bool{}
			for _, it := range v.Secret.Items {
				assert.Equal(t, it.Key, it.Path, "Secret entry %s is mounted under its own name", it.Key)
				assert.False(t, f.keys[it.Path], "%s is mounted once", it.Path)
				f.keys[it.Path] = true
			}
		}
	}
	require.NotNil(t, cm, "the ConfigMap of --config.file is mounted")
	data, ok := cm.Data[filepath.Base(f.configFile)]
	require.True(t, ok, "the ConfigMap holds %s", filepath.Base(f.configFile))
	f.config = data
	return f
}

// loadInPod lays the configuration and the key files out under a temporary
// root as the pod sees them, the keys holding a placeholder, and loads the
// configuration as the exporter does (--config.check).
func loadInPod(t *testing.T, f podFiles, keyFiles []string) (*config.Config, error) {
	t.Helper()
	root := t.TempDir()
	data := f.config
	if f.keysMount != "" {
		keys := filepath.Join(root, f.keysMount)
		require.NoError(t, os.MkdirAll(keys, 0o755))
		for _, name := range keyFiles {
			require.NoError(t, os.WriteFile(filepath.Join(keys, name), []byte("placeholder-key"), 0o600))
		}
		data = strings.ReplaceAll(data, f.keysMount+"/", keys+"/")
	}
	path := filepath.Join(root, f.configFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	cfg, err := config.Load(path)
	if err == nil {
		// Report the paths as the pod sees them.
		for i := range cfg.Apps {
			if p, ok := strings.CutPrefix(cfg.Apps[i].AppKeyFile, root); ok {
				cfg.Apps[i].AppKeyFile = p
			}
		}
	}
	return cfg, err
}

// keyFilesOf returns the base names of the app_key_file of every app of a
// configuration, without loading it.
func keyFilesOf(t *testing.T, data string) []string {
	t.Helper()
	var cfg struct {
		Apps []struct {
			AppKeyFile string `json:"app_key_file"`
		} `json:"apps"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(data), &cfg))
	var names []string
	for _, a := range cfg.Apps {
		if a.AppKeyFile != "" {
			names = append(names, filepath.Base(a.AppKeyFile))
		}
	}
	return names
}

// The base holds no Secret, generated or not, and nothing with a
// placeholder key: `kubectl apply -k` can never overwrite the Secret the
// user made. The Deployment mounts that Secret by name.
func TestBaseHoldsNoSecret(t *testing.T) {
	b := build(t)
	assert.Empty(t, b.secrets, "no Secret in the base")
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(RepoRoot, "deploy", "kubernetes"))
	require.NoError(t, err)
	out, err := m.AsYaml()
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(out), "kind: Secret"), "no object of kind Secret in `kustomize build`")
	assert.Empty(t, regexp.MustCompile(`(?i)replace-with|app_key:|appkey:`).FindAllString(string(out), -1), "no placeholder or inline key in `kustomize build`")
	kust := string(readRepo(t, "deploy/kubernetes/kustomization.yaml"))
	assert.NotRegexp(t, `(?m)^secretGenerator:`, kust)
	assert.Contains(t, kust, "kubectl -n monitoring create secret generic duix-exporter-keys", "says how to make the Secret")

	f := configFiles(t, b)
	assert.Equal(t, "duix-exporter-keys", f.secretName, "the Secret made by the user")
	assert.Empty(t, f.keys, "the whole Secret is mounted: its entries are the files duix.yml names")
}

// The configuration is a generated ConfigMap with a content hash in its
// name, referenced by the Deployment: a change rolls the pods out. It is
// a valid exporter configuration whose key files are in the keys' mount.
func TestConfigMapIsAValidConfigAndRollsOut(t *testing.T) {
	b := build(t)
	f := configFiles(t, b)
	require.NotEmpty(t, f.keysMount, "the keys' Secret is mounted")
	var cmName string
	for _, v := range b.deployment.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, "duix-exporter-config-") {
			cmName = v.ConfigMap.Name
		}
	}
	assert.Regexp(t, `^duix-exporter-config-[a-z0-9]{10}$`, cmName, "generated with a hash suffix")

	keyFiles := keyFilesOf(t, f.config)
	cfg, err := loadInPod(t, f, keyFiles)
	require.NoError(t, err, "the ConfigMap's %s is a valid configuration whose key files are in the Secret", filepath.Base(f.configFile))
	require.NotEmpty(t, cfg.Apps)
	for _, a := range cfg.Apps {
		require.NotEmpty(t, a.AppKeyFile, "app %s reads its key from the Secret", a.Name)
		assert.Equal(t, f.keysMount, filepath.Dir(a.AppKeyFile), "app %s reads its key from the Secret's mount", a.Name)
	}

	// A key file missing from the Secret is refused.
	_, err = loadInPod(t, f, keyFiles[1:])
	assert.Error(t, err, "a configuration without one of its key files")

	// The same configuration keeps its name; a changed one gets another
	// name, which the Deployment follows.
	assert.Contains(t, build(t).configMaps, cmName, "the name is stable for the same content")
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
		if e.Name() == filepath.Base(f.configFile) {
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
	assert.NotEqual(t, cmName, newName, "an edited configuration changes the pod template")
}

// Service, ServiceMonitor and rules agree on the port and the job name.
func TestScrapeWiring(t *testing.T) {
	assertScrapeWiring(t, build(t))
	rules := string(readRepo(t, RulesFile))
	assert.Contains(t, rules, `up{job="`+jobName+`"} == 0`)
	assert.Contains(t, rules, `absent(up{job="`+jobName+`"})`)
	promConfig := string(readRepo(t, "deploy/prometheus/prometheus.yml"))
	assert.Contains(t, promConfig, "job_name: "+jobName)
}

// assertScrapeWiring checks that the Service selects the pods and targets
// their port, and that the ServiceMonitor selects the Service and scrapes
// that port's /metrics as job jobName.
func assertScrapeWiring(t *testing.T, o *objects) {
	t.Helper()
	c := o.deployment.Spec.Template.Spec.Containers[0]
	for k, v := range o.service.Spec.Selector {
		assert.Equal(t, v, o.deployment.Spec.Template.Labels[k], "the Service selects the pods")
	}
	require.Len(t, o.service.Spec.Ports, 1)
	sp := o.service.Spec.Ports[0]
	assert.Equal(t, intstr.FromString(c.Ports[0].Name), sp.TargetPort)

	sm := o.serviceMonitor.Spec
	for k, v := range sm.Selector.MatchLabels {
		assert.Equal(t, v, o.service.Labels[k], "the ServiceMonitor selects the Service")
	}
	require.Len(t, sm.Endpoints, 1)
	assert.Equal(t, sp.Name, sm.Endpoints[0].Port)
	assert.Equal(t, "/metrics", sm.Endpoints[0].Path)
	require.NotEmpty(t, sm.JobLabel)
	assert.Equal(t, jobName, o.service.Labels[sm.JobLabel], "job label of the scraped series")
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
	for _, l := range []string{"version", "revision", "source"} {
		assert.Contains(t, final, "org.opencontainers.image."+l+"=", "the OCI label %s", l)
	}
}
