package envnames

import (
	"reflect"
	"strings"
	"testing"
)

// The seed's "What the commands read" section, in its order.
const seedSection = `- KUBECONFIGthe cluster the commands run against
- NAMESPACEthe namespace the schema and its database credentials live in
- OPERATOR_NAMESPACEwhere the chart installed the operator
- CONTROLLERthe controller Deployment’s name, from that release
- REGISTRY_IN_CLUSTERthe registry address a Pod in the cluster resolves
- PTAH_OCI_REGISTRYthe registry address the push goes to
- PTAH_OCI_USERNAMEthe account that push uses
- PTAH_OCI_PASSWORDits password, which no command prints`

func TestPublishedMatchesSeed(t *testing.T) {
	var got []string
	for _, n := range Published() {
		got = append(got, "- "+n.Name+n.Meaning)
	}
	if want := strings.Split(seedSection, "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("published list differs from seed 002:\n got %q\nwant %q", got, want)
	}
}

func TestReadable(t *testing.T) {
	for name, want := range map[string]bool{
		"NAMESPACE": true, "PTAH_OCI_PASSWORD": true, "PATH": true, "HOME": true,
		"TERM": false, "LANG": false, "SECRET": false, "namespace": false, "": false,
	} {
		if got := Readable(name); got != want {
			t.Errorf("Readable(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestEnvironHoldsOnlyPublishedAndBase(t *testing.T) {
	host := map[string]string{
		"NAMESPACE": "demo", "PATH": "/bin", "HOME": "/root",
		"SECRET": "s3cr3t", "TERM": "dumb", "KUBECONFIG": "/k",
	}
	got := Environ(func(k string) (string, bool) { v, ok := host[k]; return v, ok })
	want := []string{"KUBECONFIG=/k", "NAMESPACE=demo", "PATH=/bin", "HOME=/root", "TERM=xterm-256color", "LANG=C.UTF-8"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ = %q, want %q", got, want)
	}
}
