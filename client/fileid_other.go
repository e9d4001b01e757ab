//go:build !unix

package client

import "os"

// fileIdentity has no device and inode to give here: files are compared
// with os.SameFile.
func fileIdentity(os.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
