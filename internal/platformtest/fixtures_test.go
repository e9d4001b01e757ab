package platformtest_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

func TestStartServesUntilTheTestEnds(t *testing.T) {
	var (
		base string
		f    *platformtest.Faults
		resp *http.Response
	)
	t.Run("inner", func(t *testing.T) {
		sim := simulator.New()
		sim.AddApp(simulator.App{ID: appA, Key: keyA, Allowance: 1})
		base, f = platformtest.Start(t, sim)
		assert.Regexp(t, `^http://127\.0\.0\.1:\d+`+regexp.QuoteMeta(simulator.BasePath)+`$`, base)
		f.SetFault("", "", platformtest.Fault{Kind: platformtest.FaultSlowBody, Delay: time.Hour})
		req, err := http.NewRequest(http.MethodGet, base+"/"+simulator.EndpointConcurrency+"?appId="+appA, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token(t, appA, keyA))
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, int64(1), f.Simulator().RequestsFor(appA, simulator.EndpointConcurrency))
	})
	// The answer still being sent did not keep the server open.
	_, err := http.Get(base + "/" + simulator.EndpointConcurrency)
	assert.Error(t, err, "closed with the test")
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "the slow answer was cut")
	resp.Body.Close()
}

func TestFreeAddr(t *testing.T) {
	addr := platformtest.FreeAddr(t)
	assert.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err, "free to listen on")
	require.NoError(t, l.Close())
}

// The exporter's binary links neither this package nor any fault: only
// the tests and the load harness inject them.
func TestProductionBinaryHasNoFaults(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Module,Dir,GoFiles", "github.com/duix-exporter/duix_exporter").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	fault := regexp.MustCompile(`^fault|Fault`) // not "default"
	own := 0
	for dec.More() {
		var pkg struct {
			ImportPath, Dir string
			Module          *struct{ Path string }
			GoFiles         []string
		}
		require.NoError(t, dec.Decode(&pkg))
		assert.NotContains(t, pkg.ImportPath, "platformtest")
		if pkg.Module == nil || pkg.Module.Path != "github.com/duix-exporter/duix_exporter" {
			continue
		}
		own++
		for _, name := range pkg.GoFiles {
			f, err := parser.ParseFile(gotoken.NewFileSet(), filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, d := range f.Decls {
				for _, id := range declared(d) {
					assert.False(t, fault.MatchString(id), "%s declares %s in %s", pkg.ImportPath, id, name)
				}
			}
		}
	}
	assert.Greater(t, own, 3, "the module's own packages were looked at")
}

// declared lists the names a top-level declaration declares, methods
// included.
func declared(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		names = append(names, d.Name.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}
