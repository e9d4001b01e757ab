//go:build browser

package web

import (
	"context"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
)

// artifactDir (at the top of the repository) receives files for people to
// look at after a test run.
const artifactDir = "../artifacts"

// runChromium runs headless Chromium on url with the extra args and
// returns its standard output.
func runChromium(t *testing.T, chromium, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}, args...)
	cmd := exec.CommandContext(ctx, chromium, append(all, url)...)
	cmd.WaitDelay = 5 * time.Second
	var stderr platformtest.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium %v:\n%s", args, stderr.String())
	return string(out)
}

func TestLandingPageInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	require.NoError(t, err, "chromium is needed (Debian package chromium): run `make test-deps`")

	s := serve(t, startPlatform(t).Config, Options{})
	code, page := s.get(t, "/")
	require.Equal(t, http.StatusOK, code)
	for app, cells := range statusRows(page) {
		assert.Equal(t, "not scraped yet", cells[1].text, app)
	}

	metrics := s.scrape(t, "/metrics")

	dom := runChromium(t, chromium, s.url+"/", "--dump-dom")
	require.NoError(t, os.MkdirAll(artifactDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(artifactDir, "landing-page.html"), []byte(dom), 0o644))
	rows := statusRows(dom)
	require.Len(t, rows, 3, "one row per demo app in:\n%s", dom)
	for _, app := range []string{"support-desk", "sales-avatar", "museum-guide"} {
		label := "app=" + app
		require.Equal(t, 1.0, metrics["duix_up"][label], app)
		row := rows[app]
		require.Len(t, row, 8, app)
		assert.Equal(t, "up", row[1].text, app)
		assert.Equal(t, fmt.Sprintf("%g / %g",
			metrics["duix_app_concurrency_in_use"][label],
			metrics["duix_app_concurrency_limit"][label]), row[2].text, "%s: in use / limit of the scrape", app)
		assert.Equal(t, fmt.Sprintf("%g", metrics["duix_app_active_sessions"][label]), row[3].text, app)
		assert.Contains(t, row[4].text, " UTC ", app)
		assert.Equal(t, "–", row[6].text, "%s: no error", app)
		assert.Contains(t, row[7].html, `href="/probe?app=`+app+`"`, app)
	}

	shot, err := filepath.Abs(filepath.Join(artifactDir, "landing-page.png"))
	require.NoError(t, err)
	_ = os.Remove(shot)
	runChromium(t, chromium, s.url+"/", "--screenshot="+shot, "--window-size=1280,900")
	f, err := os.Open(shot)
	require.NoError(t, err, "the screenshot is written")
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 1280, img.Bounds().Dx())
	require.Equal(t, 900, img.Bounds().Dy())
	// The page is drawn with its styles: the toolkit's orange header and
	// the green "up" cells of the three apps.
	counts := map[[3]uint32]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			counts[[3]uint32{r >> 8, g >> 8, b >> 8}]++
		}
	}
	assert.Greater(t, counts[[3]uint32{0xe6, 0x52, 0x2c}], 50_000, "the orange header")
	assert.Greater(t, counts[[3]uint32{0x2e, 0x7d, 0x32}], 3*1000, "three green up cells")
	t.Logf("screenshot: %s", shot)
}
