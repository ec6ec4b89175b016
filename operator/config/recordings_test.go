package config_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestCommittedRecordingsDecode: the objects the committed recordings
// observed still decode into today's types. Each recorded check on one of
// the operator's kinds holds part of a live object (a condition's status,
// reason and generation, or a field's path and value); for every object
// and step, that part is assembled as the object it came from, each field
// typed by today's CRD schema (a path the schema no longer has fails), and
// decoded strictly (an unknown field fails) into the Go type; every
// recorded condition type and reason must still be one the API declares.
func TestCommittedRecordingsDecode(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "demo", "recordings", "runs.json"))
	must(t, err)
	var runs struct {
		Scenarios []struct {
			ID     string
			Checks []struct {
				Step     int
				Claim    string
				Evidence struct {
					Condition *struct {
						Status, Reason, LastTransitionTime string
						ObservedGeneration                 int64
					}
					Field *struct {
						Path   string
						Value  any
						Exists bool
					}
				}
			}
		}
	}
	must(t, json.Unmarshal(data, &runs))
	declared := declaredNames(t)
	types := map[string]func() any{
		"ptahschema": func() any { return &v1alpha1.PtahSchema{} }, "ptahmigration": func() any { return &v1alpha1.PtahMigration{} },
		"ptahschemaapproval": func() any { return &v1alpha1.PtahSchemaApproval{} }, "ptahmigrationapproval": func() any { return &v1alpha1.PtahMigrationApproval{} },
		"ptahmigrationrunacknowledgment": func() any { return &v1alpha1.PtahMigrationRunAcknowledgment{} },
		"ptahschemaplan":                 func() any { return &v1alpha1.PtahSchemaPlan{} }, "ptahmigrationplan": func() any { return &v1alpha1.PtahMigrationPlan{} },
	}
	condition := regexp.MustCompile(`^(\w+)=(True|False|Unknown) \((\w+)\)$`)
	decoded, conditions, fields := 0, 0, 0
	for _, sc := range runs.Scenarios {
		objects := map[string]map[string]any{}
		for _, ch := range sc.Checks {
			subject, claim, ok := strings.Cut(ch.Claim, ": ")
			kind, name, _ := strings.Cut(subject, "/")
			if !ok || types[kind] == nil {
				continue
			}
			key := strconv.Itoa(ch.Step) + " " + subject
			if objects[key] == nil {
				objects[key] = map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "metadata": map[string]any{"name": name}}
			}
			o := objects[key]
			switch ev := ch.Evidence; {
			case ev.Condition != nil:
				m := condition.FindStringSubmatch(claim)
				if m == nil {
					t.Errorf("%s step %d: condition claim %q is not Type=Status (Reason)", sc.ID, ch.Step, claim)
					continue
				}
				if !declared["Condition"][m[1]] || !declared["Reason"][m[3]] {
					t.Errorf("%s step %d: %s records condition %s reason %s, which the API no longer declares", sc.ID, ch.Step, subject, m[1], m[3])
				}
				c := map[string]any{"type": m[1], "status": ev.Condition.Status, "reason": ev.Condition.Reason,
					"observedGeneration": ev.Condition.ObservedGeneration, "lastTransitionTime": ev.Condition.LastTransitionTime, "message": ""}
				status := child(o, "status")
				list, _ := status["conditions"].([]any)
				status["conditions"] = append(list, c)
				conditions++
			case ev.Field != nil && ev.Field.Exists:
				path := splitPath(ev.Field.Path)
				if path[0] != "metadata" {
					leaf := crdSchema(t, kind)
					for _, p := range path {
						next, ok := leaf.Properties[p]
						if !ok {
							t.Errorf("%s step %d: %s records %s, but the CRD of %s has no %q there", sc.ID, ch.Step, subject, ev.Field.Path, kind, p)
							break
						}
						leaf = &next
					}
					setPath(o, path, typed(t, leaf, ev.Field.Value))
				} else {
					setPath(o, path, ev.Field.Value)
				}
				fields++
			}
		}
		for key, o := range objects {
			raw, err := json.Marshal(o)
			must(t, err)
			kind := strings.SplitN(strings.Fields(key)[1], "/", 2)[0]
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(types[kind]()); err != nil {
				t.Errorf("%s step %s: the recorded object does not decode into today's type: %v\n%s", sc.ID, key, err, raw)
			}
			decoded++
		}
	}
	if decoded == 0 || conditions == 0 || fields == 0 {
		t.Fatalf("decoded %d objects (%d conditions, %d fields) from the recordings: want some of each", decoded, conditions, fields)
	}
	t.Logf("%d recorded objects decoded (%d conditions, %d fields)", decoded, conditions, fields)
}

// declaredNames are the string constants of the API's reasons.go by
// prefix: Condition* and Reason*, as the values they hold.
func declaredNames(t *testing.T) map[string]map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "api", "v1alpha1", "reasons.go"), nil, 0)
	must(t, err)
	out := map[string]map[string]bool{"Condition": {}, "Reason": {}}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range spec.Names {
			if i >= len(spec.Values) {
				continue
			}
			lit, ok := spec.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			v, _ := strconv.Unquote(lit.Value)
			for prefix := range out {
				if strings.HasPrefix(id.Name, prefix) {
					out[prefix][v] = true
				}
			}
		}
		return true
	})
	return out
}

// crdSchema is the top-level schema of kind's CRD in crd/bases.
func crdSchema(t *testing.T, kind string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("crd", "bases", "operator.ptah.run_"+kind+"s.yaml"))
	must(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	must(t, yaml.Unmarshal(data, &crd))
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// typed is a recorded value (printed as text) as the schema's type holds it.
func typed(t *testing.T, s *apiextensionsv1.JSONSchemaProps, v any) any {
	text, ok := v.(string)
	if !ok {
		return v
	}
	switch s.Type {
	case "boolean":
		b, err := strconv.ParseBool(text)
		if err != nil {
			t.Errorf("recorded %q where the CRD has a boolean", text)
		}
		return b
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			t.Errorf("recorded %q where the CRD has an integer", text)
		}
		return n
	}
	return text
}

// splitPath splits a recorded field path at dots not escaped (\.).
func splitPath(p string) []string {
	parts := strings.Split(strings.ReplaceAll(p, `\.`, "\x00"), ".")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], "\x00", ".")
	}
	return parts
}

func child(m map[string]any, k string) map[string]any {
	c, ok := m[k].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[k] = c
	}
	return c
}

func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		m = child(m, p)
	}
	m[path[len(path)-1]] = v
}
