package validate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The Helm chart and its test values, relative to the repository root.
const (
	ChartDir       = "deploy/helm/duix-exporter"
	FullValuesFile = ChartDir + "/ci/full-values.yaml"
	ChartRulesFile = ChartDir + "/files/rules.yml"
)

// helm returns the helm binary. Without one the Helm tests are skipped,
// except in CI (CI=true), where they fail: `make test-deps` builds it.
func helm(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("helm")
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("helm is not installed (CI=true): run `make test-deps`, which builds it into .tools/, and put it on PATH (`make helm-test` does)")
	}
	t.Skip("helm is not installed: skipping the Helm chart tests (`make helm-test` builds it into .tools/ and runs them)")
	return ""
}

// helmTemplate runs `helm template` on the chart as release "duix" in
// namespace "monitoring", with args (values), and returns its output and
// error output.
func helmTemplate(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	bin := helm(t)
	cmd := exec.Command(bin, append([]string{"template", "duix", filepath.Join(RepoRoot, ChartDir), "--namespace", "monitoring"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// render runs `helm template` with args, which must succeed, and decodes
// every object strictly into its API type.
func render(t *testing.T, args ...string) *objects {
	t.Helper()
	out, stderr, err := helmTemplate(t, args...)
	require.NoError(t, err, "helm template %s:\n%s", strings.Join(args, " "), stderr)
	o := newObjects()
	r := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &v))
		if len(v) == 0 {
			continue // comments only
		}
		o.add(t, "helm template "+strings.Join(args, " "), doc)
	}
	require.NotNil(t, o.deployment)
	require.NotNil(t, o.service)
	return o
}

var (
	full = []string{"-f", filepath.Join(RepoRoot, FullValuesFile)}
	// twoApps lists two apps, their keys in an existing Secret.
	twoApps = []string{
		"--set", "existingSecret=duix-exporter-keys",
		"--set-json", `config.apps=[{"name":"support-desk","app_id":"1790000000000000101","conversations":["1081"]},{"name":"sales-avatar","app_id":"1790000000000000202"}]`,
	}
)

// Chart.yaml's appVersion is the exporter's version, and the default image
// is the one of that version.
func TestHelmChartVersion(t *testing.T) {
	var chart struct {
		APIVersion string `json:"apiVersion"`
		Name       string `json:"name"`
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(readRepo(t, ChartDir+"/Chart.yaml"), &chart))
	version := strings.TrimSpace(string(readRepo(t, "VERSION")))
	assert.Equal(t, "v2", chart.APIVersion)
	assert.Equal(t, "duix-exporter", chart.Name, "the chart's name is the job name the rules expect")
	assert.Equal(t, version, chart.AppVersion, "appVersion is VERSION")

	o := render(t)
	assert.Equal(t, "ghcr.io/duix-exporter/duix_exporter:"+version, o.deployment.Spec.Template.Spec.Containers[0].Image)
}

// With the default values the chart renders the hardened Deployment, its
// Service, ServiceAccount and configuration, and nothing optional. The
// configuration is valid but for the empty app list, which the user fills.
func TestHelmDefaultValues(t *testing.T) {
	o := render(t)
	assert.Equal(t, map[string]int{
		"apps/v1/Deployment": 1,
		"v1/Service":         1,
		"v1/ServiceAccount":  1,
		"v1/ConfigMap":       1,
		"v1/Pod":             1, // helm test's
	}, o.seen, "objects with the default values")
	assertHardened(t, o)

	// The same pod as the kustomize base.
	kpod, hpod := build(t).deployment.Spec.Template.Spec, o.deployment.Spec.Template.Spec
	kc, hc := kpod.Containers[0], hpod.Containers[0]
	assert.Equal(t, kpod.SecurityContext, hpod.SecurityContext, "pod securityContext as in the kustomize base")
	assert.Equal(t, kc.SecurityContext, hc.SecurityContext, "container securityContext as in the kustomize base")
	assert.Equal(t, kc.Resources, hc.Resources, "resources as in the kustomize base")
	assert.Equal(t, kc.Env, hc.Env, "GOMEMLIMIT as in the kustomize base")
	assert.Equal(t, kc.LivenessProbe, hc.LivenessProbe, "liveness probe as in the kustomize base")
	assert.Equal(t, kc.ReadinessProbe, hc.ReadinessProbe, "readiness probe as in the kustomize base")
	assert.Equal(t, kc.Ports, hc.Ports)
	assert.Equal(t, kpod.AutomountServiceAccountToken, hpod.AutomountServiceAccountToken)
	assert.Equal(t, kpod.TerminationGracePeriodSeconds, hpod.TerminationGracePeriodSeconds)
	assert.Subset(t, hc.Args, kc.Args, "the kustomize base's flags")

	f := configFiles(t, o)
	assert.Empty(t, f.keysMount, "no keys to mount without apps")
	_, err := loadInPod(t, f, nil)
	require.Error(t, err)
	assert.True(t, strings.HasSuffix(err.Error(), ": at least one app is required"), "only the app list is missing: %v", err)
}

// With every option on, every object decodes strictly, the pod is still
// hardened, and the configuration loads with the keys of the chart's
// Secret, one file per app.
func TestHelmFullValues(t *testing.T) {
	o := render(t, full...)
	assert.Equal(t, map[string]int{
		"apps/v1/Deployment":                      1,
		"v1/Service":                              1,
		"v1/ServiceAccount":                       1,
		"v1/ConfigMap":                            4, // the configuration, the dashboards, two extraManifests
		"v1/Secret":                               2, // the keys, the web configuration
		"v1/Pod":                                  1, // helm test's
		"policy/v1/PodDisruptionBudget":           1,
		"networking.k8s.io/v1/NetworkPolicy":      1,
		"monitoring.coreos.com/v1/ServiceMonitor": 3, // /metrics, and two per-app targets
		"monitoring.coreos.com/v1/PrometheusRule": 1,
	}, o.seen, "objects with every option on")
	assertHardened(t, o)

	f := configFiles(t, o)
	secret := o.secrets[f.secretName]
	require.NotNil(t, secret, "the Deployment mounts the chart's Secret %s", f.secretName)
	var apps []string
	var values struct {
		Config struct {
			Apps []struct {
				Name string `json:"name"`
			} `json:"apps"`
		} `json:"config"`
		Secret struct {
			Keys map[string]string `json:"keys"`
		} `json:"secret"`
	}
	require.NoError(t, yaml.Unmarshal(readRepo(t, FullValuesFile), &values))
	for _, a := range values.Config.Apps {
		apps = append(apps, a.Name)
		assert.Equal(t, values.Secret.Keys[a.Name], string(secret.Data[a.Name+".key"]), "the Secret holds the key of %s under %s.key", a.Name, a.Name)
	}
	assert.Len(t, secret.Data, len(apps), "one key per app")
	assertKeyFilePerApp(t, f, apps)

	// The keys are only in the Secret.
	for _, cm := range o.configMaps {
		for _, key := range values.Secret.Keys {
			for _, data := range cm.Data {
				assert.NotContains(t, data, key, "no key in ConfigMap %s", cm.Name)
			}
			assert.NotContains(t, cm.Data[filepath.Base(f.configFile)], key, "no key in the ConfigMap")
		}
	}
	c := o.deployment.Spec.Template.Spec.Containers[0]
	for _, key := range values.Secret.Keys {
		for _, a := range c.Args {
			assert.NotContains(t, a, key)
		}
		for _, e := range c.Env {
			assert.NotContains(t, e.Value, key)
		}
	}
}

// assertKeyFilePerApp checks that the keys' volume shows exactly one file
// <app>.key per app, that each app reads its key from that file, and that
// the configuration loads with those files and fails without one of them.
func assertKeyFilePerApp(t *testing.T, f podFiles, apps []string) {
	t.Helper()
	require.NotEmpty(t, apps)
	require.Equal(t, "/etc/duix_exporter/keys", f.keysMount)
	var want []string
	for _, a := range apps {
		want = append(want, a+".key")
	}
	var got []string
	for k := range f.keys {
		got = append(got, k)
	}
	assert.ElementsMatch(t, want, got, "the keys' volume shows one file per app")

	cfg, err := loadInPod(t, f, want)
	require.NoError(t, err, "the rendered configuration is valid, with the key files the Secret's volume shows:\n%s", f.config)
	var names []string
	for _, a := range cfg.Apps {
		names = append(names, a.Name)
		assert.Equal(t, f.keysMount+"/"+a.Name+".key", a.AppKeyFile, "app %s reads its key file", a.Name)
		assert.Empty(t, a.AppKey, "no inline key")
		assert.Empty(t, a.Token, "no inline token")
	}
	assert.Equal(t, apps, names, "the apps of the values, in order")
	_, err = loadInPod(t, f, want[1:])
	assert.Error(t, err, "the configuration needs every key file")
}

// existingSecret: no Secret is rendered, the Deployment mounts the named
// one, one file per app, and the pod template does not depend on it.
func TestHelmExistingSecret(t *testing.T) {
	o := render(t, twoApps...)
	assert.Empty(t, o.secrets, "no Secret made by the chart")
	assertHardened(t, o)
	f := configFiles(t, o)
	assert.Equal(t, "duix-exporter-keys", f.secretName)
	assertKeyFilePerApp(t, f, []string{"support-desk", "sales-avatar"})
	ann := o.deployment.Spec.Template.Annotations
	assert.NotEmpty(t, ann["checksum/config"])
	assert.NotContains(t, ann, "checksum/secret", "the exporter re-reads key files: a changed existingSecret needs no rollout")
}

// The checksum annotations roll the pods out when, and only when, the
// configuration or the chart's Secret changes.
func TestHelmChecksumRollsOnChange(t *testing.T) {
	ann := func(args ...string) map[string]string {
		return render(t, append(slices.Clone(full), args...)...).deployment.Spec.Template.Annotations
	}
	base := ann()
	require.Regexp(t, `^[0-9a-f]{64}$`, base["checksum/config"])
	require.Regexp(t, `^[0-9a-f]{64}$`, base["checksum/secret"])
	assert.Equal(t, base, ann(), "the same values give the same pod template")

	timeout := ann("--set", "config.api.timeout=9s")
	assert.NotEqual(t, base["checksum/config"], timeout["checksum/config"], "a changed api.timeout rolls the pods")
	assert.Equal(t, base["checksum/secret"], timeout["checksum/secret"])

	conv := ann("--set-json", `config.apps[0]={"name":"support-desk","app_id":"1790000000000000101","conversations":["1081"]}`)
	assert.NotEqual(t, base["checksum/config"], conv["checksum/config"], "a changed app rolls the pods")

	key := ann("--set", "secret.keys.support-desk=another-placeholder-key")
	assert.NotEqual(t, base["checksum/secret"], key["checksum/secret"], "a changed key of the chart's Secret rolls the pods")
	assert.Equal(t, base["checksum/config"], key["checksum/config"])
}

// The ServiceMonitor and the PrometheusRule exist only when enabled, and
// carry the values given.
func TestHelmOptionalMonitoring(t *testing.T) {
	for _, c := range []struct {
		sm, pr bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		o := render(t, args(
			"--set", "serviceMonitor.enabled="+boolString(c.sm),
			"--set", "prometheusRule.enabled="+boolString(c.pr))...)
		assert.Equal(t, c.sm, o.serviceMonitor != nil, "ServiceMonitor when serviceMonitor.enabled=%v", c.sm)
		assert.Equal(t, c.pr, o.prometheusRule != nil, "PrometheusRule when prometheusRule.enabled=%v", c.pr)
	}

	o := render(t, full...)
	var values struct {
		ServiceMonitor struct {
			Interval          monitoringv1.Duration        `json:"interval"`
			ScrapeTimeout     monitoringv1.Duration        `json:"scrapeTimeout"`
			Labels            map[string]string            `json:"labels"`
			Relabelings       []monitoringv1.RelabelConfig `json:"relabelings"`
			MetricRelabelings []monitoringv1.RelabelConfig `json:"metricRelabelings"`
		} `json:"serviceMonitor"`
		PrometheusRule struct {
			Labels map[string]string `json:"labels"`
		} `json:"prometheusRule"`
	}
	require.NoError(t, yaml.Unmarshal(readRepo(t, FullValuesFile), &values))
	sm := o.serviceMonitor
	require.NotNil(t, sm)
	for k, v := range values.ServiceMonitor.Labels {
		assert.Equal(t, v, sm.Labels[k], "ServiceMonitor label %s", k)
	}
	require.Len(t, sm.Spec.Endpoints, 1)
	ep := sm.Spec.Endpoints[0]
	assert.Equal(t, values.ServiceMonitor.Interval, ep.Interval)
	assert.Equal(t, values.ServiceMonitor.ScrapeTimeout, ep.ScrapeTimeout)
	assert.Equal(t, values.ServiceMonitor.Relabelings, ep.RelabelConfigs)
	assert.Equal(t, values.ServiceMonitor.MetricRelabelings, ep.MetricRelabelConfigs)

	pr := o.prometheusRule
	require.NotNil(t, pr)
	for k, v := range values.PrometheusRule.Labels {
		assert.Equal(t, v, pr.Labels[k], "PrometheusRule label %s", k)
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// The ServiceMonitor scrapes the Service's port, in the release's
// namespace, as job duix-exporter (the rules' job), and the rules are
// those of deploy/prometheus/rules.yml.
func TestHelmScrapeWiringAndRules(t *testing.T) {
	o := render(t, args("--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")...)
	assertScrapeWiring(t, o)
	assert.Equal(t, []string{"monitoring"}, o.serviceMonitor.Spec.NamespaceSelector.MatchNames)

	var want, chartFile monitoringv1.PrometheusRuleSpec
	strict(t, RulesFile, readRepo(t, RulesFile), &want)
	strict(t, ChartRulesFile, readRepo(t, ChartRulesFile), &chartFile)
	require.NotEmpty(t, want.Groups)
	assert.Equal(t, chartFile, o.prometheusRule.Spec, "the PrometheusRule's spec is %s, untouched by Helm's templating", ChartRulesFile)
	assert.Equal(t, want, chartFile, "%s has the groups of %s", ChartRulesFile, RulesFile)
}

// GOMEMLIMIT is 90% of the memory limit, whatever its unit, or the value
// given; none without a memory limit.
func TestHelmGoMemLimit(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "115MiB"},
		{[]string{"--set", "resources.limits.memory=1Gi"}, "921MiB"},
		{[]string{"--set", "resources.limits.memory=1.5Gi"}, "1382MiB"},
		{[]string{"--set", "resources.limits.memory=500M"}, "429MiB"},
		{[]string{"--set", "resources.limits.memory=268435456"}, "230MiB"},
		{[]string{"--set-string", "resources.limits.memory=268435456"}, "230MiB"},
		{[]string{"--set", "goMemLimit=100MiB"}, "100MiB"},
		{[]string{"--set", "resources.limits.memory=null"}, ""},
	} {
		o := render(t, c.args...)
		var got string
		for _, e := range o.deployment.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "GOMEMLIMIT" {
				got = e.Value
			}
		}
		assert.Equal(t, c.want, got, "GOMEMLIMIT with %v", c.args)
	}
}

// Bad values are refused before anything is applied, with a message that
// says what is wrong and never repeats a key.
func TestHelmRefusesBadValues(t *testing.T) {
	const secret = "do-not-print-this-key"
	app := func(extra string) string {
		return `config.apps=[{"name":"support-desk","app_id":"1790000000000000101"` + extra + `}]`
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a typo in a value", []string{"--set", "serviceMonitor.enable=true"}, "additional properties 'enable' not allowed"},
		{"a typo in the configuration", []string{"--set", "config.api.timeuot=5s"}, "additional properties 'timeuot' not allowed"},
		{"a key in the configuration", []string{"--set", "existingSecret=k", "--set-json", app(`,"app_key":"` + secret + `"`)}, "additional properties 'app_key' not allowed"},
		{"a token in the configuration", []string{"--set", "existingSecret=k", "--set-json", app(`,"token":"` + secret + `"`)}, "additional properties 'token' not allowed"},
		{"credentials in http_client", []string{"--set-json", `config.api.http_client={"basic_auth":{"username":"u","password":"` + secret + `"}}`}, "/config/api/http_client/basic_auth"},
		{"an app_id that is a number", []string{"--set", "existingSecret=k", "--set-json", `config.apps=[{"name":"a","app_id":1790000000000000101}]`}, "/config/apps/0/app_id"},
		{"an app name that cannot be a Secret key", []string{"--set", "existingSecret=k", "--set-json", `config.apps=[{"name":"a:b","app_id":"1"}]`}, "/config/apps/0/name"},
		{"an app listed twice", []string{"--set", "existingSecret=k", "--set-json", `config.apps=[{"name":"a","app_id":"1"},{"name":"a","app_id":"2"}]`}, `app "a" is listed twice`},
		{"apps without keys", []string{"--set-json", app("")}, "no Secret holds their keys"},
		{"two sources of keys", []string{"--set", "existingSecret=k", "--set", "secret.create=true", "--set-json", app("")}, "either existingSecret or secret.create"},
		{"an app without its key", []string{"--set", "secret.create=true", "--set", "secret.keys.other=" + secret, "--set-json", app("")}, `no key for app "support-desk"`},
		{"a key for no app", []string{"--set", "secret.create=true", "--set", "secret.keys.support-desk=" + secret, "--set", "secret.keys.other=" + secret, "--set-json", app("")}, `"other", which is not an app`},
		{"an empty key", []string{"--set", "secret.create=true", "--set", "secret.keys.support-desk=", "--set-json", app("")}, "/secret/keys/support-desk"},
		{"a memory limit that is not a quantity", []string{"--set", "resources.limits.memory=lots"}, `resources.limits.memory "lots"`},
		{"a bad duration", []string{"--set", "serviceMonitor.interval=30"}, "/serviceMonitor/interval"},
		{"a typo in a per-app target", []string{"--set-json", `serviceMonitor.targets=[{"name":"a","intervall":"1m"}]`}, "additional properties 'intervall' not allowed"},
		{"a target name that cannot name an object", []string{"--set-json", `serviceMonitor.targets=[{"name":"Support_Desk"}]`}, "/serviceMonitor/targets/0/name"},
		{"a typo in the web configuration", []string{"--set-json", `webConfig.config={"tls_config":{}}`}, "additional properties 'tls_config' not allowed"},
		{"a clear-text password for basic auth", []string{"--set-json", `webConfig.config={"basic_auth_users":{"prometheus":"` + secret + `"}}`}, "webConfig.config.basic_auth_users.prometheus is not a bcrypt hash"},
		{"a typo in a probe", []string{"--set", "livenessProbe.periodSecond=5"}, "additional properties 'periodSecond' not allowed"},
		{"a typo in the budget", []string{"--set", "podDisruptionBudget.minAvailible=1"}, "additional properties 'minAvailible' not allowed"},
		{"a typo in the dashboards", []string{"--set", "dashboards.enable=true"}, "additional properties 'enable' not allowed"},
		{"a namespace that cannot be one", []string{"--set", "dashboards.namespace=Grafana_Dashboards"}, "/dashboards/namespace"},
		{"a ServiceMonitor namespace that cannot be one", []string{"--set", "serviceMonitor.namespace=monitoring.svc"}, "/serviceMonitor/namespace"},
		{"a PrometheusRule namespace that cannot be one", []string{"--set", "prometheusRule.namespace=-monitoring"}, "/prometheusRule/namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, err := helmTemplate(t, c.args...)
			require.Error(t, err, "helm template %v must fail", c.args)
			assert.Contains(t, stderr, c.want)
			assert.NotContains(t, stderr+out, secret, "the key is not repeated")
		})
	}
}
