package v1alpha1

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestStatusWireFormat holds both kinds' status, now built on the shared
// OperationStatus, to the JSON the flat statuses wrote before it: a status
// holding every field decodes with no field unknown and encodes back to
// the same document, so objects written by earlier managers still read.
func TestStatusWireFormat(t *testing.T) {
	for file, status := range map[string]any{
		"testdata/status-ptahschema.json":    &PtahSchemaStatus{},
		"testdata/status-ptahmigration.json": &PtahMigrationStatus{},
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(status); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		again, err := json.Marshal(status)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s does not encode back the same:\nwant %v\ngot  %v", file, want, got)
		}
	}
}
