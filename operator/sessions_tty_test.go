//go:build linux

package operator

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/alecthomas/kingpin/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// openPTY opens a pseudo-terminal pair: what is written to master is read
// from tty, which a command can take as its stdin.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err, "opening /dev/ptmx")
	t.Cleanup(func() { master.Close() })
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		t.Helper()
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), req, uintptr(arg)); errno != 0 {
			t.Fatalf("ioctl %#x on /dev/ptmx: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

func TestSessionsStopAsksOnATerminal(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("museum-guide")
	for _, tc := range []struct {
		answer  string
		code    int
		stopped bool
	}{
		{"n\n", exitDeclined, false},
		{"\n", exitDeclined, false},
		{"maybe\n", exitDeclined, false},
		{"y\n", exitOK, true},
	} {
		s := p.Sim.Sessions(app)[0]
		before := p.Sim.InUse(app)
		master, tty := openPTY(t)
		_, err := master.WriteString(tc.answer)
		require.NoError(t, err)

		res := p.run(t, tty, "sessions", "stop", "--app=museum-guide", "--session="+s.ID)
		assert.Equal(t, tc.code, res.code, "answer %q", tc.answer)
		assert.Contains(t, res.stderr, "Session "+s.ID+" of app museum-guide: conversation "+s.ConversationID+", started ",
			"the prompt describes the session")
		assert.Contains(t, res.stderr, "Stop session "+s.ID+" of app museum-guide? This ends the call. [y/N]")
		if tc.stopped {
			assert.Contains(t, res.stdout, "stopped session "+s.ID)
			assert.Equal(t, before-1, p.Sim.InUse(app))
		} else {
			assert.Contains(t, res.stderr, "not confirmed")
			assert.Empty(t, res.stdout)
			assert.Equal(t, before, p.Sim.InUse(app), "answer %q stops nothing", tc.answer)
		}
	}
	assert.Equal(t, int64(1), p.Sim.Requests(simulator.EndpointStop), "only the confirmed stop reached the platform")
}

func TestSessionsStopManyAsksOnceOnATerminal(t *testing.T) {
	p := startPlatform(t)
	app := p.ID("support-desk")
	old1 := p.startOld(t, "support-desk", "1081", 5*time.Hour)
	old2 := p.startOld(t, "support-desk", "1082", 3*time.Hour)
	ask := func(answer string, args ...string) cliResult {
		t.Helper()
		master, tty := openPTY(t)
		_, err := master.WriteString(answer)
		require.NoError(t, err)
		return p.run(t, tty, append([]string{"sessions", "stop", "--app=support-desk"}, args...)...)
	}

	const olderPrompt = "Stop these 2 session(s) of app support-desk? This ends their calls. [y/N] "
	res := ask("n\n", "--older-than=2h")
	assert.Equal(t, exitDeclined, res.code)
	assert.Contains(t, tableRows(t, res.stdout), old1, "the sessions are shown before the question")
	assert.Equal(t, olderPrompt+"duix_exporter sessions stop: not confirmed: no session of app support-desk was stopped\n", res.stderr)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop))
	assert.Equal(t, 5, p.Sim.InUse(app))

	res = ask("y\n", "--older-than=2h")
	assert.Equal(t, exitOK, res.code)
	assert.Equal(t, olderPrompt, res.stderr, "asked once for all of them")
	assert.Contains(t, res.stdout, "session "+old1+": stopped\nsession "+old2+": stopped\n")
	assert.EqualValues(t, 2, p.Sim.Requests(simulator.EndpointStop))
	assert.Equal(t, 3, p.Sim.InUse(app))

	const allPrompt = "Close every session of app support-desk (3 listed)? This ends all its calls. [y/N] "
	res = ask("\n", "--all")
	assert.Equal(t, exitDeclined, res.code)
	assert.Equal(t, allPrompt+"duix_exporter sessions stop: not confirmed: no session of app support-desk was stopped\n", res.stderr)
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStopAll))
	assert.Equal(t, 3, p.Sim.InUse(app))

	res = ask("YES\n", "--all")
	assert.Equal(t, exitOK, res.code)
	assert.Equal(t, allPrompt, res.stderr)
	assert.Contains(t, res.stdout, `closed every session of app support-desk: the platform answered code "200"`)
	assert.Zero(t, p.Sim.InUse(app))
}

// Ctrl-C at the question (the daemon's signal handling ends the command's
// context) is no: the command returns at once, not confirmed, nothing
// stopped, and a "y" typed later has nothing left to confirm.
func TestCtrlCAtTheQuestionIsNo(t *testing.T) {
	p := startPlatform(t)
	p.startOld(t, "support-desk", "1081", 5*time.Hour)
	for _, args := range [][]string{{"--all"}, {"--older-than=2h"}, {"--session=" + p.Sim.Sessions(p.ID("museum-guide"))[0].ID}} {
		master, tty := openPTY(t) // a terminal where nobody types yet
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr platformtest.Buffer
		app := kingpin.New("duix_exporter", "")
		app.Terminate(nil)
		cmds := Register(app)
		appName := "support-desk"
		if strings.HasPrefix(args[0], "--session") {
			appName = "museum-guide"
		}
		cmd, err := app.Parse(append([]string{"sessions", "stop", "--app=" + appName}, args...))
		require.NoError(t, err)
		done := make(chan int, 1)
		go func() {
			code, _ := cmds.Run(ctx, cmd, Env{Program: "duix_exporter", ConfigFile: p.Config, Stdin: tty, Stdout: &stdout, Stderr: &stderr})
			done <- code
		}()
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "[y/N] ") }, time.Minute, time.Millisecond, "the question is asked")
		cancel() // Ctrl-C
		select {
		case code := <-done:
			assert.Equal(t, exitDeclined, code, "%v", args)
			assert.Contains(t, stderr.String(), "not confirmed", "%v", args)
		case <-time.After(time.Minute):
			t.Fatalf("%v: still waiting at the question after Ctrl-C", args)
		}
		_, err = master.WriteString("y\n")
		require.NoError(t, err)
	}
	assert.Zero(t, p.Sim.Requests(simulator.EndpointStop)+p.Sim.Requests(simulator.EndpointStopAll), "nothing was stopped")
}
