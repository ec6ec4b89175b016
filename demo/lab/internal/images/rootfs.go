package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"ptah.run/operator/demo/lab/internal/run"
)

const (
	suite  = "bookworm"
	mirror = "http://deb.debian.org/debian"
)

// nodePackages follow kind's images/base/Dockerfile, with Debian's containerd
// and runc instead of kind's own builds.
var nodePackages = []string{
	"systemd", "systemd-sysv", "dbus", "conntrack", "iptables", "nftables", "iproute2", "ethtool",
	"util-linux", "mount", "kmod", "libseccomp2", "pigz", "bash", "ca-certificates", "curl", "jq",
	"procps", "containerd", "runc", "containernetworking-plugins", "socat", "ebtables", "ipset",
	"e2fsprogs", "hostname", "findutils", "gawk", "less",
}

// postgresPackages is Debian's PostgreSQL 15 server and client.
var postgresPackages = []string{"postgresql-15", "postgresql-client-15", "locales", "ca-certificates"}

// Rootfs is a debootstrapped Debian root filesystem, cached by what went into it.
type Rootfs struct {
	Name     string
	Packages []string
}

// Key is the content key: suite, mirror and the sorted package list.
func (f Rootfs) Key() string {
	p := append([]string(nil), f.Packages...)
	sort.Strings(p)
	sum := sha256.Sum256([]byte(suite + "\n" + mirror + "\n" + strings.Join(p, ",")))
	return hex.EncodeToString(sum[:])[:12]
}

// Ensure returns the directory of the root filesystem, running debootstrap
// only when no complete copy with the same key is cached.
func (f Rootfs) Ensure(ctx context.Context, r *run.Runner, cache string) (string, error) {
	dir := filepath.Join(cache, "rootfs", f.Name+"-"+f.Key())
	if _, err := os.Stat(filepath.Join(dir, ".ptah-complete")); err == nil {
		r.Printf("rootfs %s: cached in %s", f.Name, dir)
		return dir, nil
	}
	done := r.Step(fmt.Sprintf("rootfs %s: debootstrap %s (%d packages)", f.Name, suite, len(f.Packages)))
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return "", err
	}
	if _, err := r.Output(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(f.Packages, ","), suite, tmp, mirror); err != nil {
		return "", fmt.Errorf("rootfs %s: %w (is Debian's mirror reachable?)", f.Name, err)
	}
	// Smaller images: no package lists, documentation or foreign locales.
	if _, err := r.Output(ctx, "chroot", tmp, "apt-get", "clean"); err != nil {
		return "", err
	}
	for _, g := range []string{"var/lib/apt/lists/*", "usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "var/log/*.log", "var/cache/debconf/*-old"} {
		matches, _ := filepath.Glob(filepath.Join(tmp, g))
		for _, m := range matches {
			os.RemoveAll(m)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".ptah-complete"), nil, 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	done(dir)
	return dir, nil
}
