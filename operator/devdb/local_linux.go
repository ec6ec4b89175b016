package devdb

import "syscall"

// serverProcAttr: the server ends with ptah even when ptah is killed
// outright (Pdeathsig).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
