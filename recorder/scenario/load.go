package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// maxFileSize bounds what the loader reads: a scenario is a page of text.
const maxFileSize = 1 << 20

// Load reads one scenario file. The error is Refusals when the file
// breaks a rule, listing every rule it breaks.
func Load(file string) (Scenario, error) {
	data, err := readFile(file)
	if err != nil {
		return Scenario{}, err
	}
	s, rs := Parse(file, data)
	if len(rs) > 0 {
		return Scenario{}, rs
	}
	return s, nil
}

func readFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read scenario %s: %w", file, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read scenario %s: %w", file, err)
	}
	return data, nil
}

// Parse decodes and checks one scenario file's bytes; file names it in
// refusals and gives the id it must carry. The scenario is complete only
// when there are no refusals.
func Parse(file string, data []byte) (Scenario, Refusals) {
	rs := &refusals{file: file}
	if len(data) > maxFileSize {
		rs.add(0, "", fmt.Sprintf("is larger than %d bytes", maxFileSize), "split it into smaller scenarios")
		return Scenario{}, rs.list
	}
	tree, ok := decode(data, rs)
	if !ok {
		return Scenario{}, rs.list
	}
	pruned, ok := shape{rs: rs}.check(tree, reflect.TypeOf(Scenario{}), nil)
	if !ok {
		return Scenario{}, rs.list
	}
	// The pruned tree holds only known keys of the right types, so strict
	// decoding into the types succeeds; a failure here is a loader bug.
	js, err := json.Marshal(pruned)
	if err != nil {
		rs.add(0, "", "cannot be re-encoded: "+err.Error(), "report this as a recorder bug")
		return Scenario{}, rs.list
	}
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		rs.add(0, "", "cannot be decoded: "+err.Error(), "report this as a recorder bug")
		return Scenario{}, rs.list
	}
	s.File = file
	validate(&s, rs)
	// A reader fixes a file top to bottom: the file's own keys, then step 1...
	sort.SliceStable(rs.list, func(i, j int) bool { return rs.list[i].Step < rs.list[j].Step })
	return s, rs.list
}

// decode turns YAML into a JSON tree with numbers kept as written, refusing
// files that are not exactly one YAML mapping.
func decode(data []byte, rs *refusals) (any, bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		rs.add(0, "", "is empty", "write a scenario: id, title, tagline, learn, tags and steps")
		return nil, false
	}
	// A second document would be silently ignored by the decoder below.
	docs := 0
	d := goyaml.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		err := d.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rs.add(0, "", "is not valid YAML: "+oneLine(err.Error()), "fix the YAML at the line named")
			return nil, false
		}
		docs++
		if docs > 1 {
			rs.add(0, "", "holds more than one YAML document", "write one scenario per file, without a second ---")
			return nil, false
		}
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		rs.add(0, "", "is not valid YAML: "+oneLine(err.Error()), "fix the YAML at the line named (each key once per mapping)")
		return nil, false
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		rs.add(0, "", "is not valid YAML: "+oneLine(err.Error()), "fix the YAML")
		return nil, false
	}
	if tree == nil {
		rs.add(0, "", "is empty", "write a scenario: id, title, tagline, learn, tags and steps")
		return nil, false
	}
	return tree, true
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Extensions are the file names LoadDir reads as scenarios.
var Extensions = []string{".yaml", ".yml"}

// LoadDir loads every scenario file in dir (not its subfolders), or the one
// file dir names, and returns the scenarios sorted by id. The error is
// Refusals when any file breaks a rule, listing every refusal of every
// file; any other error means the folder could not be read.
func LoadDir(dir string) ([]Scenario, error) {
	files, err := scenarioFiles(dir)
	if err != nil {
		return nil, err
	}
	var all Refusals
	if len(files) == 0 {
		all = append(all, Refusal{File: dir, Problem: "holds no scenario files", Fix: "write scenarios as <id>.yaml in it"})
		return nil, all
	}
	var out []Scenario
	byID := map[string]string{}
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return nil, err
		}
		s, rs := Parse(f, data)
		if s.ID != "" {
			if first, dup := byID[s.ID]; dup {
				rs = append(rs, Refusal{File: f, Key: "id", Problem: fmt.Sprintf("%q is also the id of %s", s.ID, first),
					Fix: "give each scenario its own id and file name"})
			} else {
				byID[s.ID] = f
			}
		}
		if len(rs) > 0 {
			all = append(all, rs...)
			continue
		}
		out = append(out, s)
	}
	if len(all) > 0 {
		return nil, all
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func scenarioFiles(dir string) ([]string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("scenario folder %s: %w", dir, err)
	}
	if !info.IsDir() {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("scenario folder %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !hasExtension(name) {
			continue
		}
		files = append(files, filepath.Join(dir, name))
	}
	sort.Strings(files)
	return files, nil
}

func hasExtension(name string) bool {
	for _, ext := range Extensions {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
