package validate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duix-exporter/duix_exporter/config"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Each test below turns one knob of the chart and checks what it renders,
// so that a knob that does nothing fails its test.

// container returns the exporter's container of a rendering.
func container(o *objects) corev1.Container {
	return o.deployment.Spec.Template.Spec.Containers[0]
}

// args is twoApps followed by more arguments.
func args(more ...string) []string {
	return append(slices.Clone(twoApps), more...)
}

func TestHelmImageRegistry(t *testing.T) {
	version := strings.TrimSpace(string(readRepo(t, "VERSION")))
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "ghcr.io/duix-exporter/duix_exporter:" + version},
		{[]string{"--set", "image.registry=registry.example.com:5000"}, "registry.example.com:5000/duix-exporter/duix_exporter:" + version},
		{[]string{"--set", "global.imageRegistry=mirror.example.com"}, "mirror.example.com/duix-exporter/duix_exporter:" + version},
		{[]string{"--set", "image.registry=", "--set", "image.repository=registry.example.com/duix_exporter"}, "registry.example.com/duix_exporter:" + version},
		{[]string{"--set", "image.tag=0.0.9"}, "ghcr.io/duix-exporter/duix_exporter:0.0.9"},
	} {
		o := render(t, c.args...)
		assert.Equal(t, c.want, container(o).Image, "image with %v", c.args)
	}
	o := render(t, "--set", "global.imageRegistry=mirror.example.com")
	pod := o.pods["duix-duix-exporter-test-connection"]
	require.NotNil(t, pod)
	assert.Equal(t, "mirror.example.com/library/busybox:1.37", pod.Spec.Containers[0].Image, "global.imageRegistry applies to the test pod too")
}

// Per-app targets: a ServiceMonitor each, scraping /probe?app=NAME as the
// probe job with the app as instance, with the target's settings or the
// defaults.
func TestHelmServiceMonitorTargets(t *testing.T) {
	o := render(t, full...)
	require.Len(t, o.serviceMonitors, 3, "the exporter's and one per target")
	main := o.serviceMonitors["duix-exporter-ci"]
	require.NotNil(t, main)
	require.Len(t, main.Spec.Endpoints, 1)
	assert.Equal(t, "/metrics", main.Spec.Endpoints[0].Path)

	type want struct {
		app, interval, timeout, shard string
		metricRelabels                map[string]string
	}
	for name, w := range map[string]want{
		"duix-exporter-ci-support-desk": {"support-desk", "1m", "25s", "1", map[string]string{"team": "support"}},
		"duix-exporter-ci-sales":        {"sales-avatar", "45s", "15s", "0", map[string]string{"cluster": "ci"}},
	} {
		sm := o.serviceMonitors[name]
		require.NotNil(t, sm, "ServiceMonitor %s", name)
		assert.Equal(t, "prometheus", sm.Namespace)
		assert.Equal(t, w.shard, sm.Labels["shard"], "%s: the target's labels, else the defaults'", name)
		assert.Equal(t, "kube-prometheus-stack", sm.Labels["release"], "%s: serviceMonitor.labels", name)
		assert.Equal(t, []string{"monitoring"}, sm.Spec.NamespaceSelector.MatchNames)
		for k, v := range sm.Spec.Selector.MatchLabels {
			assert.Equal(t, v, o.service.Labels[k], "%s selects the Service", name)
		}
		require.Len(t, sm.Spec.Endpoints, 1)
		ep := sm.Spec.Endpoints[0]
		assert.Equal(t, "http-metrics", ep.Port)
		assert.Equal(t, "/probe", ep.Path)
		assert.Equal(t, map[string][]string{"app": {w.app}}, ep.Params)
		assert.Equal(t, monitoringv1.Duration(w.interval), ep.Interval)
		assert.Equal(t, monitoringv1.Duration(w.timeout), ep.ScrapeTimeout)
		require.Len(t, ep.RelabelConfigs, 3)
		assert.Equal(t, "job", ep.RelabelConfigs[0].TargetLabel)
		assert.Equal(t, "duix-apps", *ep.RelabelConfigs[0].Replacement, "the mixin's probe job")
		assert.Equal(t, "instance", ep.RelabelConfigs[1].TargetLabel)
		assert.Equal(t, w.app, *ep.RelabelConfigs[1].Replacement, "the app is the instance")
		assert.Equal(t, "region", ep.RelabelConfigs[2].TargetLabel, "defaults.additionalRelabels")
		got := map[string]string{}
		for _, r := range ep.MetricRelabelConfigs {
			assert.Equal(t, "replace", strings.ToLower(r.Action))
			got[r.TargetLabel] = *r.Replacement
		}
		assert.Equal(t, w.metricRelabels, got, "%s: additionalMetricsRelabels, the target's or the defaults'", name)
	}

	// The probe job's name, and a target naming no app of config.apps.
	o = render(t, args("--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.probeJob=probes",
		"--set-json", `serviceMonitor.targets=[{"name":"sales-avatar"}]`)...)
	sm := o.serviceMonitors["duix-duix-exporter-sales-avatar"]
	require.NotNil(t, sm)
	assert.Equal(t, "probes", *sm.Spec.Endpoints[0].RelabelConfigs[0].Replacement)
	assert.Equal(t, map[string][]string{"app": {"sales-avatar"}}, sm.Spec.Endpoints[0].Params, "app defaults to the name")
	assert.Equal(t, monitoringv1.Duration("30s"), sm.Spec.Endpoints[0].Interval, "the default interval")
	assert.Empty(t, sm.Spec.Endpoints[0].MetricRelabelConfigs)

	_, stderr, err := helmTemplate(t, args("--set", "serviceMonitor.enabled=true", "--set-json", `serviceMonitor.targets=[{"name":"billing"}]`)...)
	require.Error(t, err)
	assert.Contains(t, stderr, `app "billing" of target "billing" is not an app of config.apps`)
	_, stderr, err = helmTemplate(t, args("--set", "serviceMonitor.enabled=true", "--set-json", `serviceMonitor.targets=[{"name":"a","app":"sales-avatar"},{"name":"a","app":"support-desk"}]`)...)
	require.Error(t, err)
	assert.Contains(t, stderr, `target "a" is listed twice`)
}

// The ServiceMonitors' namespace, scheme, TLS and credentials.
func TestHelmServiceMonitorEndpointSettings(t *testing.T) {
	o := render(t, full...)
	for name, sm := range o.serviceMonitors {
		assert.Equal(t, "prometheus", sm.Namespace, "%s: serviceMonitor.namespace", name)
		ep := sm.Spec.Endpoints[0]
		require.NotNil(t, ep.Scheme)
		assert.Equal(t, "https", ep.Scheme.String(), "%s: https, since the web configuration serves TLS", name)
		require.NotNil(t, ep.TLSConfig, "%s: tlsConfig", name)
		require.NotNil(t, ep.TLSConfig.ServerName)
		assert.Equal(t, "duix-exporter-ci.monitoring.svc", *ep.TLSConfig.ServerName)
		require.NotNil(t, ep.TLSConfig.CA.Secret)
		assert.Equal(t, "ca.crt", ep.TLSConfig.CA.Secret.Key)
		require.NotNil(t, ep.BasicAuth, "%s: basicAuth", name)
		assert.Equal(t, "duix-exporter-scrape", ep.BasicAuth.Username.Name)
		assert.Equal(t, "password", ep.BasicAuth.Password.Key)
	}

	o = render(t, args("--set", "serviceMonitor.enabled=true")...)
	ep := o.serviceMonitor.Spec.Endpoints[0]
	assert.Equal(t, "monitoring", o.serviceMonitor.Namespace, "the release's namespace by default")
	assert.Equal(t, "http", ep.Scheme.String(), "http without TLS")
	assert.Nil(t, ep.TLSConfig)
	assert.Nil(t, ep.BasicAuth)
	assert.Empty(t, ep.BearerTokenFile)

	o = render(t, args("--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.scheme=https",
		"--set", "serviceMonitor.bearerTokenFile=/var/run/secrets/token",
		"--set-json", `serviceMonitor.authorization={"type":"Bearer","credentials":{"name":"scrape","key":"token"}}`)...)
	ep = o.serviceMonitor.Spec.Endpoints[0]
	assert.Equal(t, "https", ep.Scheme.String(), "serviceMonitor.scheme")
	assert.Equal(t, "/var/run/secrets/token", ep.BearerTokenFile)
	require.NotNil(t, ep.Authorization)
	assert.Equal(t, "Bearer", ep.Authorization.Type)
	assert.Equal(t, "token", ep.Authorization.Credentials.Key)
}

func TestHelmPrometheusRuleNamespaceAndLabels(t *testing.T) {
	o := render(t, full...)
	pr := o.prometheusRule
	require.NotNil(t, pr)
	assert.Equal(t, "prometheus", pr.Namespace, "prometheusRule.namespace")
	assert.Equal(t, "alert-rules", pr.Labels["role"], "prometheusRule.additionalLabels")
	assert.Equal(t, "kube-prometheus-stack", pr.Labels["release"], "prometheusRule.labels")

	o = render(t, args("--set", "prometheusRule.enabled=true")...)
	assert.Equal(t, "monitoring", o.prometheusRule.Namespace, "the release's namespace by default")
	assert.NotContains(t, o.prometheusRule.Labels, "role")
}

// writeTLSPair writes a self-signed certificate and its key.
func writeTLSPair(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "duix-exporter"},
		DNSNames:     []string{"duix-exporter"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(certFile), 0o755))
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
}

// The web configuration is a Secret mounted where --web.config.file points,
// and exporter-toolkit accepts it with the TLS pair of tlsSecret mounted
// where it names; TLS turns the probes and the scrapes to HTTPS, and basic
// auth refuses httpGet probes without credentials.
func TestHelmWebConfig(t *testing.T) {
	o := render(t, full...)
	c := container(o)
	const flag = "--web.config.file=/etc/duix_exporter/web-config/web-config.yml"
	assert.Contains(t, c.Args, flag)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	require.Equal(t, "/etc/duix_exporter/web-config", mounts["web-config"])
	require.Equal(t, "/etc/duix_exporter/tls", mounts["tls"])
	var webSecret, tlsSecret string
	for _, v := range o.deployment.Spec.Template.Spec.Volumes {
		switch v.Name {
		case "web-config":
			webSecret = v.Secret.SecretName
		case "tls":
			tlsSecret = v.Secret.SecretName
			assert.Equal(t, []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}, v.Secret.Items)
		}
	}
	assert.Equal(t, "duix-exporter-tls", tlsSecret, "webConfig.tlsSecret")
	secret := o.secrets[webSecret]
	require.NotNil(t, secret, "the chart's Secret %s holds the web configuration", webSecret)
	content := secret.StringData["web-config.yml"]
	require.NotEmpty(t, content)

	// Lay the files out as the pod sees them and let exporter-toolkit
	// validate the file (strict decoding, the users' hashes, the TLS pair).
	root := t.TempDir()
	writeTLSPair(t, filepath.Join(root, "etc/duix_exporter/tls/tls.crt"), filepath.Join(root, "etc/duix_exporter/tls/tls.key"))
	path := filepath.Join(root, "etc/duix_exporter/web-config/web-config.yml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(content, "/etc/duix_exporter/", root+"/etc/duix_exporter/")), 0o600))
	require.NoError(t, web.Validate(path), "exporter-toolkit accepts the web configuration:\n%s", content)
	var cfg struct {
		TLSServerConfig map[string]any    `json:"tls_server_config"`
		BasicAuthUsers  map[string]string `json:"basic_auth_users"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(content), &cfg))
	assert.NotEmpty(t, cfg.TLSServerConfig)
	assert.Contains(t, cfg.BasicAuthUsers, "prometheus")

	// TLS without basic auth: the default httpGet probes get HTTPS.
	o = render(t, args("--set-json", `webConfig.config={"tls_server_config":{"cert_file":"/etc/duix_exporter/tls/tls.crt","key_file":"/etc/duix_exporter/tls/tls.key"}}`,
		"--set", "webConfig.tlsSecret=duix-tls", "--set", "serviceMonitor.enabled=true")...)
	c = container(o)
	require.NotNil(t, c.LivenessProbe.HTTPGet)
	assert.Equal(t, corev1.URISchemeHTTPS, c.LivenessProbe.HTTPGet.Scheme)
	assert.Equal(t, corev1.URISchemeHTTPS, c.ReadinessProbe.HTTPGet.Scheme)
	assert.Equal(t, "https", o.serviceMonitor.Spec.Endpoints[0].Scheme.String())

	// Basic auth with the default httpGet probes is refused.
	_, stderr, err := helmTemplate(t, args("--set-json", `webConfig.config={"basic_auth_users":{"prometheus":"$2y$10$abcdefghijklmnopqrstuu5Ee9kxXGbh2lf3ckVbQyJ7m0Fj6Ge/m"}}`)...)
	require.Error(t, err)
	assert.Contains(t, stderr, "answers 401 to this httpGet probe")

	// An existing Secret: mounted, nothing made; not both.
	o = render(t, args("--set", "webConfig.existingSecret=my-web-config")...)
	assert.Contains(t, container(o).Args, flag)
	assert.Empty(t, o.secrets)
	found := false
	for _, v := range o.deployment.Spec.Template.Spec.Volumes {
		if v.Name == "web-config" {
			found = v.Secret.SecretName == "my-web-config"
		}
	}
	assert.True(t, found, "the existing Secret is mounted")
	_, stderr, err = helmTemplate(t, args("--set", "webConfig.existingSecret=my-web-config", "--set-json", `webConfig.config={"http_server_config":{"http2":false}}`)...)
	require.Error(t, err)
	assert.Contains(t, stderr, "either config or existingSecret")

	// None by default.
	o = render(t, twoApps...)
	for _, a := range container(o).Args {
		assert.NotContains(t, a, "--web.config.file")
	}
}

// The dashboards' ConfigMap holds the chart's copy of dashboards/, which
// is what that directory holds, under the sidecar's label.
func TestHelmDashboards(t *testing.T) {
	for _, name := range Dashboards {
		assert.Equal(t, string(readRepo(t, DashboardsDir+"/"+name)), string(readRepo(t, ChartDashboardsDir+"/"+name)),
			"%s/%s is stale: run `make manifests`", ChartDashboardsDir, name)
	}
	entries, err := os.ReadDir(filepath.Join(RepoRoot, ChartDashboardsDir))
	require.NoError(t, err)
	assert.Len(t, entries, len(Dashboards), "the chart holds the dashboards only")

	o := render(t, full...)
	cm := o.configMaps["duix-exporter-ci-dashboards"]
	require.NotNil(t, cm)
	assert.Equal(t, "grafana", cm.Namespace, "dashboards.namespace")
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
	assert.Equal(t, "platform", cm.Labels["team"])
	assert.Equal(t, "Duix", cm.Annotations["grafana_folder"])
	require.Len(t, cm.Data, len(Dashboards))
	for _, name := range Dashboards {
		assert.JSONEq(t, string(readRepo(t, DashboardsDir+"/"+name)), cm.Data[name], "the ConfigMap holds %s as it is", name)
	}

	o = render(t, args("--set", "dashboards.enabled=true", "--set", "dashboards.label=grafana_dashboard_duix", "--set", "dashboards.labelValue=yes")...)
	cm = o.configMaps["duix-duix-exporter-dashboards"]
	require.NotNil(t, cm)
	assert.Equal(t, "monitoring", cm.Namespace)
	assert.Equal(t, "yes", cm.Labels["grafana_dashboard_duix"])
	assert.NotContains(t, cm.Labels, "grafana_dashboard")
	assert.NotContains(t, render(t, twoApps...).configMaps, "duix-duix-exporter-dashboards", "none by default")
}

func TestHelmProbes(t *testing.T) {
	o := render(t, full...)
	c := container(o)
	require.NotNil(t, c.LivenessProbe.TCPSocket)
	assert.Nil(t, c.LivenessProbe.HTTPGet, "a tcpSocket probe replaces the default httpGet")
	assert.EqualValues(t, 15, c.LivenessProbe.PeriodSeconds)
	assert.EqualValues(t, 4, c.LivenessProbe.FailureThreshold)
	require.NotNil(t, c.ReadinessProbe.TCPSocket)
	assert.EqualValues(t, 7, c.ReadinessProbe.PeriodSeconds)
	assert.EqualValues(t, 2, c.ReadinessProbe.InitialDelaySeconds)

	o = render(t, args("--set", "readinessProbe.periodSeconds=9", "--set", "livenessProbe.httpGet.path=/-/healthy", "--set", "livenessProbe.timeoutSeconds=2")...)
	c = container(o)
	assert.EqualValues(t, 9, c.ReadinessProbe.PeriodSeconds)
	assert.Equal(t, "/-/ready", c.ReadinessProbe.HTTPGet.Path)
	assert.EqualValues(t, 2, c.LivenessProbe.TimeoutSeconds)
}

func TestHelmPodDisruptionBudget(t *testing.T) {
	o := render(t, full...)
	require.NotNil(t, o.pdb)
	require.NotNil(t, o.pdb.Spec.MaxUnavailable)
	assert.Equal(t, intstr.FromInt32(1), *o.pdb.Spec.MaxUnavailable)
	for k, v := range o.pdb.Spec.Selector.MatchLabels {
		assert.Equal(t, v, o.deployment.Spec.Template.Labels[k], "the budget selects the pods")
	}
	assert.Nil(t, render(t, twoApps...).pdb, "none by default")
	_, stderr, err := helmTemplate(t, args("--set", "podDisruptionBudget.minAvailable=1", "--set", "podDisruptionBudget.maxUnavailable=1")...)
	require.Error(t, err)
	assert.Contains(t, stderr, "/podDisruptionBudget")
}

func TestHelmNetworkPolicy(t *testing.T) {
	o := render(t, full...)
	np := o.networkPolicy
	require.NotNil(t, np)
	for k, v := range np.Spec.PodSelector.MatchLabels {
		assert.Equal(t, v, o.deployment.Spec.Template.Labels[k], "the policy selects the pods")
	}
	require.Len(t, np.Spec.Ingress, 1)
	in := np.Spec.Ingress[0]
	var ports []string
	for _, p := range in.Ports {
		ports = append(ports, p.Port.String())
	}
	assert.Equal(t, []string{"http-metrics", "janitor"}, ports, "the metrics port, and the janitor's when on")
	require.Len(t, in.From, 1)
	assert.Equal(t, "monitoring", in.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"], "networkPolicy.ingressFrom")
	assert.Len(t, np.Spec.Egress, 2, "networkPolicy.egress")
	assert.Contains(t, np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)

	o = render(t, args("--set", "networkPolicy.enabled=true")...)
	np = o.networkPolicy
	require.NotNil(t, np)
	require.Len(t, np.Spec.Ingress, 1)
	assert.Empty(t, np.Spec.Ingress[0].From, "every pod may scrape")
	require.Len(t, np.Spec.Ingress[0].Ports, 1)
	assert.Equal(t, "http-metrics", np.Spec.Ingress[0].Ports[0].Port.String())
	assert.NotContains(t, np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress, "egress is not restricted without rules")
	assert.Nil(t, render(t, twoApps...).networkPolicy, "none by default")
}

func TestHelmExtraManifests(t *testing.T) {
	o := render(t, full...)
	cm := o.configMaps["duix-extra"]
	require.NotNil(t, cm, "an object, its strings rendered with tpl")
	assert.Equal(t, "duix", cm.Data["release"])
	cm = o.configMaps["duix-extra-string"]
	require.NotNil(t, cm, "a string rendered with tpl")
	assert.Equal(t, "monitoring", cm.Data["namespace"])
}

// helm test: a hardened pod fetching /-/healthy and /metrics through the
// Service, or checking that credentials are asked for.
func TestHelmConnectionTest(t *testing.T) {
	o := render(t, twoApps...)
	pod := o.pods["duix-duix-exporter-test-connection"]
	require.NotNil(t, pod)
	assert.Equal(t, "test", pod.Annotations["helm.sh/hook"])
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	script := strings.Join(c.Args, "\n")
	base := "http://duix-duix-exporter.monitoring.svc:9866"
	assert.Contains(t, script, base+"/-/healthy")
	assert.Contains(t, script, base+"/metrics")
	assert.Equal(t, o.service.Name, "duix-duix-exporter")
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)

	o = render(t, args("--set", "service.port=9000")...)
	assert.Contains(t, strings.Join(o.pods["duix-duix-exporter-test-connection"].Spec.Containers[0].Args, "\n"), "http://duix-duix-exporter.monitoring.svc:9000/metrics", "the Service's port")

	o = render(t, full...)
	pod = o.pods["duix-exporter-ci-test-connection"]
	require.NotNil(t, pod)
	script = strings.Join(pod.Spec.Containers[0].Args, "\n")
	assert.Contains(t, script, "https://duix-exporter-ci.monitoring.svc:9866/-/healthy", "https with TLS")
	assert.Contains(t, script, "401", "with basic auth, the test checks that credentials are asked for")
	assert.Equal(t, "registry.example.com/busybox:1.37", pod.Spec.Containers[0].Image, "tests.image")

	assert.Empty(t, render(t, args("--set", "tests.enabled=false")...).pods, "tests.enabled=false")
}

// The janitor's listener: off by default; on, a flag, a container port
// and a Service port of its own, the metrics port as it was.
func TestHelmJanitor(t *testing.T) {
	o := render(t, twoApps...)
	c := container(o)
	require.Len(t, c.Ports, 1, "only the metrics port by default")
	require.Len(t, o.service.Spec.Ports, 1)
	for _, a := range c.Args {
		assert.NotContains(t, a, "--janitor")
	}

	o = render(t, args("--set", "janitor.enabled=true")...)
	assertHardened(t, o)
	c = container(o)
	assert.Contains(t, c.Args, "--janitor.listen-address=:9868")
	assert.Contains(t, c.Args, "--web.listen-address=:9866", "the metrics listener as it was")
	require.Len(t, c.Ports, 2)
	assert.Equal(t, corev1.ContainerPort{Name: "http-metrics", ContainerPort: 9866, Protocol: corev1.ProtocolTCP}, c.Ports[0])
	assert.Equal(t, corev1.ContainerPort{Name: "janitor", ContainerPort: 9868, Protocol: corev1.ProtocolTCP}, c.Ports[1])
	require.Len(t, o.service.Spec.Ports, 2)
	assert.Equal(t, "http-metrics", o.service.Spec.Ports[0].Name)
	assert.EqualValues(t, 9866, o.service.Spec.Ports[0].Port)
	assert.Equal(t, "janitor", o.service.Spec.Ports[1].Name)
	assert.EqualValues(t, 9868, o.service.Spec.Ports[1].Port)
	assert.Equal(t, intstr.FromString("janitor"), o.service.Spec.Ports[1].TargetPort)

	o = render(t, args("--set", "janitor.enabled=true", "--set", "janitor.port=9999")...)
	assert.Contains(t, container(o).Args, "--janitor.listen-address=:9999")
	assert.EqualValues(t, 9999, o.service.Spec.Ports[1].Port)

	_, stderr, err := helmTemplate(t, args("--set", "janitor.enabled=true", "--set", "janitor.port=9866")...)
	require.Error(t, err, "the janitor cannot share the metrics port")
	assert.Contains(t, stderr, "/janitor/port")

	_, stderr, err = helmTemplate(t, args("--set", "janitor.enabled=true", "--set", "replicaCount=2")...)
	require.Error(t, err, "one budget: one janitor behind the Service")
	assert.Contains(t, stderr, "janitor.enabled needs replicaCount 1")
	assert.Len(t, render(t, args("--set", "replicaCount=2")...).deployment.Spec.Template.Spec.Containers[0].Ports, 1, "replicas without the janitor")
	for _, flag := range []string{"--janitor.listen-address=:9999", "--janitor.listen-address"} {
		_, stderr, err = helmTemplate(t, args("--set", "replicaCount=2", "--set-json", `extraArgs=["`+flag+`"]`)...)
		require.Error(t, err, "the janitor only through janitor.enabled, which keeps it to one replica")
		assert.Contains(t, stderr, "not a --janitor flag")
	}

	// The configuration of docs/janitor.md: the top-level section and an
	// app that opts in reach the exporter's configuration file.
	optIn := []string{
		"--set", "existingSecret=duix-exporter-keys", "--set", "janitor.enabled=true",
		"--set-json", `config.janitor={"dry_run":true,"max_stops_per_hour":3,"alert_name":"KioskStuck"}`,
		"--set-json", `config.apps=[{"name":"kiosk-fleet","app_id":"1001","janitor":{"max_session_age":"2h"}},{"name":"web","app_id":"1002"}]`,
	}
	f := configFiles(t, render(t, optIn...))
	cfg, err := loadInPod(t, f, []string{"kiosk-fleet.key", "web.key"})
	require.NoError(t, err, f.config)
	assert.Equal(t, config.Janitor{MaxStopsPerHour: 3, DryRun: true, AlertName: "KioskStuck"}, cfg.Janitor)
	require.NotNil(t, cfg.Apps[0].Janitor)
	assert.Equal(t, 2*time.Hour, time.Duration(cfg.Apps[0].Janitor.MaxSessionAge))
	assert.Nil(t, cfg.Apps[1].Janitor)

	for value, where := range map[string]string{
		`config.janitor={"max_stops_per_hour":0}`:                                         "/config/janitor/max_stops_per_hour",
		`config.janitor={"dryrun":true}`:                                                  "/config/janitor",
		`config.apps=[{"name":"a","app_id":"1","janitor":{}}]`:                            "/config/apps/0/janitor",
		`config.apps=[{"name":"a","app_id":"1","janitor":{"max_session_age":"2 hours"}}]`: "/config/apps/0/janitor/max_session_age",
	} {
		_, stderr, err := helmTemplate(t, args("--set-json", value)...)
		require.Error(t, err, value)
		assert.Contains(t, stderr, where, value)
	}
}
