package devdb

import "syscall"

// serverProcAttr: macOS has no parent-death signal; the server is stopped
// when ptah ends normally, and outlives a ptah killed outright.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
