//go:build linux

package operator

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	app := p.id("museum-guide")
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
		s := p.sim.Sessions(app)[0]
		before := p.sim.InUse(app)
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
			assert.Equal(t, before-1, p.sim.InUse(app))
		} else {
			assert.Contains(t, res.stderr, "not confirmed")
			assert.Empty(t, res.stdout)
			assert.Equal(t, before, p.sim.InUse(app), "answer %q stops nothing", tc.answer)
		}
	}
	assert.Equal(t, int64(1), p.sim.Requests(simulator.EndpointStop), "only the confirmed stop reached the platform")
}
