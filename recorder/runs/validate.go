package runs

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validate checks runs.json bytes against runs.schema.json.
func Validate(runs []byte) error {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return fmt.Errorf("runs: runs.schema.json is not JSON: %w", err)
	}
	if err := c.AddResource("runs.schema.json", doc); err != nil {
		return fmt.Errorf("runs: runs.schema.json: %w", err)
	}
	sch, err := c.Compile("runs.schema.json")
	if err != nil {
		return fmt.Errorf("runs: compile runs.schema.json: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(runs))
	if err != nil {
		return fmt.Errorf("runs: runs.json is not JSON: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("runs: runs.json does not match runs.schema.json: %w", err)
	}
	return nil
}
