package client

import "time"

// SetSecretFileRecheck sets how often the secret files made from now on are
// looked at for a change, and returns a function that restores it.
func SetSecretFileRecheck(d time.Duration) (restore func()) {
	old := secretFileRecheck
	secretFileRecheck = d
	return func() { secretFileRecheck = old }
}
