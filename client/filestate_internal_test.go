package client

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A secret file counts as unchanged only while it is the same file with
// the same size and modification time: another file renamed into its
// place is a change even with the same size and time.
func TestSameFileTellsAReplacedFileFromTheOneRead(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "key"), filepath.Join(dir, "key.new")
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	write := func(p, content string) os.FileInfo {
		t.Helper()
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		st, err := os.Stat(p)
		require.NoError(t, err)
		return st
	}
	read := stateOf(write(path, "key-one"))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, sameFile(st, read), "unchanged")

	write(other, "key-two") // same size and time
	require.NoError(t, os.Rename(other, path))
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.False(t, sameFile(st, read), "another file in its place")

	read = stateOf(st)
	require.NoError(t, os.Chtimes(path, mtime, mtime.Add(time.Nanosecond)))
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.False(t, sameFile(st, read), "touched")

	read = stateOf(st)
	require.NoError(t, os.WriteFile(path, []byte("key-three!"), 0o600))
	require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.False(t, sameFile(st, read), "another size at the same time")
	assert.False(t, sameFile(st, fileState{}), "nothing read yet")
}
