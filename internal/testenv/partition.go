package testenv

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// PostgresOption changes how StartPostgres runs the server.
type PostgresOption func(*postgresOptions)

type postgresOptions struct {
	netns    *Partition
	settings []string
}

// Settings are server settings, "name=value", given after ptah's own (as
// postgres -c name=value), such as "log_statement=all".
func Settings(settings ...string) PostgresOption {
	return func(o *postgresOptions) { o.settings = append(o.settings, settings...) }
}

// Behind runs the server inside p's network namespace, listening on
// p.ServerAddr, so that p can cut it off from its clients.
func Behind(p *Partition) PostgresOption { return func(o *postgresOptions) { o.netns = p } }

// Partition is a network namespace linked to this one by a veth pair: a
// server started in it (Behind) is reached at ServerAddr from ClientAddr.
// Cut takes the namespace's end of the link down, the way a network
// partition looks to both ends: every packet each way is dropped, with no
// refusal and no reset, only silence; Heal lifts it. Needs root and
// iproute2.
type Partition struct {
	Name                   string
	ServerAddr, ClientAddr string
	peer                   string
	t                      testing.TB
}

// NewPartition makes the namespace and its link; both are removed when t ends.
func NewPartition(t testing.TB) *Partition {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("testenv: a partition needs iproute2's ip (apt-get install iproute2)")
	}
	id := randomHex(3)
	// A /30 of 10.200.0.0/16 picked at random, so parallel tests rarely
	// meet; a clash fails at ip addr add.
	b := []byte(id)
	third, fourth := int(b[0]+b[1])%250, (int(b[2]+b[3])%60)*4
	p := &Partition{Name: "ptah-" + id, ServerAddr: fmt.Sprintf("10.200.%d.%d", third, fourth+2),
		ClientAddr: fmt.Sprintf("10.200.%d.%d", third, fourth+1), peer: "pv" + id + "b", t: t}
	host, peer := "pv"+id+"a", p.peer
	p.ip("netns", "add", p.Name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", p.Name).Run() })
	p.ip("link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	p.ip("link", "set", peer, "netns", p.Name)
	p.ip("addr", "add", p.ClientAddr+"/30", "dev", host)
	p.ip("link", "set", host, "up")
	p.ip("-n", p.Name, "addr", "add", p.ServerAddr+"/30", "dev", peer)
	p.ip("-n", p.Name, "link", "set", peer, "up")
	p.ip("-n", p.Name, "link", "set", "lo", "up")
	return p
}

// Cut drops every packet between the namespace and the client, both ways.
func (p *Partition) Cut() { p.ip("-n", p.Name, "link", "set", p.peer, "down") }

// Heal lets them through again (the address stays; its route comes back
// with the link).
func (p *Partition) Heal() { p.ip("-n", p.Name, "link", "set", p.peer, "up") }

func (p *Partition) ip(args ...string) {
	p.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		p.t.Fatalf("testenv: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
