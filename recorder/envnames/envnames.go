// Package envnames is the one list of environment names a published command
// may read, each with the sentence a reader sees, and the fixed terminal base
// every command also gets. The scenario loader, the command runner and the
// published page all read these tables, so they cannot drift apart.
package envnames

import "strings"

// Name is an environment name a reader's own environment carries.
type Name struct {
	Name string
	// Meaning is the sentence the published page shows next to the name.
	Meaning string
}

// published is in the order of seed 002, "What the commands read".
var published = []Name{
	{"KUBECONFIG", "the cluster the commands run against"},
	{"NAMESPACE", "the namespace the schema and its database credentials live in"},
	{"OPERATOR_NAMESPACE", "where the chart installed the operator"},
	{"CONTROLLER", "the controller Deployment’s name, from that release"},
	{"REGISTRY_IN_CLUSTER", "the registry address a Pod in the cluster resolves"},
	{"PTAH_OCI_REGISTRY", "the registry address the push goes to"},
	{"PTAH_OCI_USERNAME", "the account that push uses"},
	{"PTAH_OCI_PASSWORD", "its password, which no command prints"},
}

// Published returns the published names in the order the page lists them.
func Published() []Name {
	return append([]Name(nil), published...)
}

// IsPublished reports whether name is on the published list.
func IsPublished(name string) bool {
	for _, n := range published {
		if n.Name == name {
			return true
		}
	}
	return false
}

// Variable is one entry of the terminal base: a name every command gets
// besides the published ones, with a fixed value or the recorder's own.
type Variable struct {
	Name string
	// Value is the fixed value; empty when Inherit is set.
	Value string
	// Inherit takes the value from the recorder's own environment: where
	// the tools are (PATH) and whose home their caches live in (HOME).
	Inherit bool
	// Readable says a step's run may read the name: every reader's shell
	// has it, so reading it does not depend on the lab.
	Readable bool
}

// base is what a terminal needs to behave the same for every recording:
// the terminal type and a locale are fixed, so output does not depend on the
// recorder's host.
var base = []Variable{
	{Name: "PATH", Inherit: true, Readable: true},
	{Name: "HOME", Inherit: true, Readable: true},
	{Name: "TERM", Value: "xterm-256color"},
	{Name: "LANG", Value: "C.UTF-8"},
}

// Base returns the terminal base in a fixed order.
func Base() []Variable {
	return append([]Variable(nil), base...)
}

// Readable reports whether a step's run may read name from its environment:
// a published name, or PATH or HOME.
func Readable(name string) bool {
	if IsPublished(name) {
		return true
	}
	for _, v := range base {
		if v.Name == name {
			return v.Readable
		}
	}
	return false
}

// List is the published names joined for a message: "KUBECONFIG, NAMESPACE, ...".
func List() string {
	names := make([]string, len(published))
	for i, n := range published {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

// Environ builds a command's whole environment as KEY=VALUE lines: the
// published names lookup finds, then the terminal base. A name lookup does
// not find is left unset rather than set empty, as in a reader's shell.
func Environ(lookup func(string) (string, bool)) []string {
	var env []string
	for _, n := range published {
		if v, ok := lookup(n.Name); ok {
			env = append(env, n.Name+"="+v)
		}
	}
	for _, b := range base {
		if !b.Inherit {
			env = append(env, b.Name+"="+b.Value)
			continue
		}
		if v, ok := lookup(b.Name); ok {
			env = append(env, b.Name+"="+v)
		}
	}
	return env
}
