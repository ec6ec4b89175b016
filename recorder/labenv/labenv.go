// Package labenv reads the lab environment file the recorder runs against:
// the values of the published names, the lab's versions and run id, and
// where the lab keeps its credential values. It is the only place the
// recorder learns anything about the lab.
//
// The file (demo/.lab/environment) is KEY=VALUE lines; blank lines and lines
// starting with # are ignored, an optional "export " prefix and one pair of
// surrounding quotes are dropped. Besides the published names it may hold:
//
//	PTAH_LAB_SECRETS          credential files, separated by ":"; each holds
//	                          one secret value per line (blank lines ignored);
//	                          relative paths are from the file's folder
//	PTAH_LAB_PLACEHOLDERS     Secrets (namespace/name, separated by spaces or
//	                          commas) whose values are placeholders, not
//	                          credentials (a URL to a database that is not there)
//	PTAH_LAB_RUN_ID           the run id the lab built its names from
//	PTAH_LAB_KUBERNETES       Kubernetes version of the cluster
//	PTAH_LAB_KIND             kind version
//	PTAH_LAB_OPERATOR_COMMIT  commit the operator images were built from
//	PTAH_LAB_PTAH_VERSION     ptah version in the executor image
//	PTAH_LAB_EXECUTOR_DIGEST  digest of the executor image
package labenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/runs"
)

// Versions identify the lab a recording was made against (runs.json holds
// them, so they live in package runs).
type Versions = runs.Versions

// Secret is one credential value and where it came from (never printed).
type Secret struct {
	Value []byte
	// From is "file:line", safe to print.
	From string
}

// Lab is a parsed environment file.
type Lab struct {
	File     string
	Values   map[string]string
	Versions Versions
	RunID    string
	Secrets  []Secret
	// Placeholders are the Secrets (namespace/name) whose values are not
	// credentials.
	Placeholders []string
}

// minSecret is the shortest value a scan can look for without refusing
// ordinary text; a shorter credential is a lab error.
const minSecret = credential.MinLength

// Load reads the environment file and every credential file it names.
func Load(file string) (*Lab, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("labenv: read the lab environment %s (run `make demo-up`, or pass -environment): %w", file, err)
	}
	l := &Lab{File: file, Values: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("labenv: %s line %d is not KEY=VALUE", file, n)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		l.Values[k] = v
	}
	l.RunID = l.Values["PTAH_LAB_RUN_ID"]
	l.Placeholders = strings.FieldsFunc(l.Values["PTAH_LAB_PLACEHOLDERS"], func(r rune) bool { return r == ',' || r == ' ' })
	l.Versions = Versions{
		Kubernetes:     l.Values["PTAH_LAB_KUBERNETES"],
		Kind:           l.Values["PTAH_LAB_KIND"],
		OperatorCommit: l.Values["PTAH_LAB_OPERATOR_COMMIT"],
		OperatorSource: l.Values["PTAH_LAB_OPERATOR_SOURCE"],
		PtahVersion:    l.Values["PTAH_LAB_PTAH_VERSION"],
		ExecutorDigest: l.Values["PTAH_LAB_EXECUTOR_DIGEST"],
	}
	// The registry password is a published name whose value is a secret.
	if pw := l.Values[secretName]; pw != "" {
		if len(pw) < minSecret {
			return nil, fmt.Errorf("labenv: %s: %s is shorter than %d bytes and would match ordinary text; regenerate it", file, secretName, minSecret)
		}
		l.Secrets = append(l.Secrets, Secret{Value: []byte(pw), From: file + ":" + secretName})
	}
	for _, p := range filepath.SplitList(l.Values["PTAH_LAB_SECRETS"]) {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		if err := l.readSecrets(p); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *Lab) readSecrets(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("labenv: read credential file %s named by PTAH_LAB_SECRETS in %s: %w", file, l.File, err)
	}
	for n, line := range strings.Split(string(raw), "\n") {
		v := strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(v) == "" {
			continue
		}
		if len(v) < minSecret {
			return fmt.Errorf("labenv: %s line %d: a credential shorter than %d bytes would match ordinary text; regenerate it", file, n+1, minSecret)
		}
		l.Secrets = append(l.Secrets, Secret{Value: []byte(v), From: fmt.Sprintf("%s:%d", file, n+1)})
	}
	return nil
}

// Lookup finds a value the lab set.
func (l *Lab) Lookup(name string) (string, bool) {
	v, ok := l.Values[name]
	return v, ok
}

// secretName is the one published name whose value is a credential.
const secretName = "PTAH_OCI_PASSWORD"

// Public are the values of the published names that are not credentials
// (a user name, a registry address, namespaces): printed on every page by
// design, so a Secret holding one does not make it a credential.
func (l *Lab) Public(published []string) []string {
	var out []string
	for _, n := range published {
		if v := l.Values[n]; n != secretName && v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Credentials are what the lab knows must not be published: every value it
// generated (and the parts they carry, such as a URL's password) and the
// credentials of the kubeconfig the steps run with. public are values that
// never count (Public).
func (l *Lab) Credentials(public []string) (*credential.Set, error) {
	set := credential.NewSet(public...)
	for _, s := range l.Secrets {
		set.AddValue(s.Value, "a credential the lab generated ("+s.From+")")
	}
	if kc := l.Values["KUBECONFIG"]; kc != "" {
		if err := set.AddKubeconfig(kc); err != nil {
			return nil, fmt.Errorf("labenv: %s: %w", l.File, err)
		}
	}
	return set, nil
}
