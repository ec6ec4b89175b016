package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// manifestValue is one name a manifest template may use: where its value
// comes from, its default ("" means required) and what it accepts.
type manifestValue struct {
	fallback string
	check    func(string) error
	help     string
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("is %q, want one of %s", v, strings.Join(values, ", "))
	}
}

// manifestValues are the names a step sets through its environment.
var manifestValues = map[string]manifestValue{
	"APPLY":             {check: oneOf("Never", "OnApproval", "Always"), help: "Never, OnApproval or Always"},
	"ALLOW_DESTRUCTIVE": {fallback: "false", check: oneOf("true", "false"), help: "true or false"},
	"SUSPEND":           {fallback: "false", check: oneOf("true", "false"), help: "true or false"},
	"INTERVAL": {fallback: "5m", help: "a duration from 30s to 24h", check: func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 30*time.Second || d > 24*time.Hour {
			return fmt.Errorf("is %q, want a duration from 30s to 24h", v)
		}
		return nil
	}},
}

var (
	digestPattern      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	placeholderPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	namePattern        = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// Manifest renders demo/manifests/NAME.yaml for the digest, with the values
// getenv gives for APPLY, ALLOW_DESTRUCTIVE, INTERVAL and SUSPEND and the
// lab's NAMESPACE and REGISTRY_IN_CLUSTER. It refuses a missing required
// value, a value outside what the name accepts, and a name it does not know.
func (l *Lab) Manifest(name, digest string, getenv func(string) (string, bool)) (string, error) {
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("%q is not a manifest name: use one of %s", name, l.manifestNames())
	}
	if !digestPattern.MatchString(digest) {
		return "", fmt.Errorf("%s: digest %q is not sha256:<64 hex>: pass what `lab publish` printed", name, digest)
	}
	raw, err := os.ReadFile(filepath.Join(l.Root, "demo", "manifests", name+".yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: no demo/manifests/%s.yaml: use one of %s", name, name, l.manifestNames())
	}
	if err != nil {
		return "", err
	}
	env, err := l.environment()
	if err != nil {
		return "", err
	}
	ns := env.get("NAMESPACE")
	if v, ok := getenv("NAMESPACE"); ok && v != "" {
		// A scenario's own namespace (scenario-up).
		ns = v
	}
	fixed := map[string]string{"DIGEST": digest, "NAMESPACE": ns, "REGISTRY_IN_CLUSTER": env.get("REGISTRY_IN_CLUSTER")}
	var problems []string
	out := placeholderPattern.ReplaceAllStringFunc(string(raw), func(m string) string {
		key := placeholderPattern.FindStringSubmatch(m)[1]
		if v, ok := fixed[key]; ok {
			return v
		}
		spec, known := manifestValues[key]
		if !known {
			problems = append(problems, fmt.Sprintf("the template uses ${%s}, which the lab does not set", key))
			return m
		}
		v, ok := getenv(key)
		if !ok || v == "" {
			if spec.fallback == "" {
				problems = append(problems, fmt.Sprintf("%s is not set: set %s=<%s>", key, key, spec.help))
				return m
			}
			v = spec.fallback
		}
		if err := spec.check(v); err != nil {
			problems = append(problems, fmt.Sprintf("%s %v", key, err))
			return m
		}
		return v
	})
	if len(problems) > 0 {
		return "", fmt.Errorf("%s: %s", name, strings.Join(dedupe(problems), "; "))
	}
	return out, nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func (l *Lab) manifestNames() string {
	files, _ := filepath.Glob(filepath.Join(l.Root, "demo", "manifests", "*.yaml"))
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
