//go:build unix

package client

import (
	"os"
	"syscall"
)

// fileIdentity returns the device and inode of the file st describes.
func fileIdentity(st os.FileInfo) (dev, ino uint64, ok bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(s.Dev), uint64(s.Ino), true // #nosec G115 -- an identity compared for equality, never used as a number
}
