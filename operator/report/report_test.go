package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestDocumentExitCodes(t *testing.T) {
	coded := fmt.Errorf("apply: %w", Errorf(StalePlan, "changed"))
	cases := []struct {
		negative bool
		err      error
		exit     int
		code     Code
	}{
		{false, nil, ExitOK, ""},
		{true, nil, ExitNegative, ""},
		{false, coded, ExitError, StalePlan},
		{true, errors.New("plain"), ExitError, Internal},
	}
	for _, c := range cases {
		d := New("schema apply", map[string]int{"n": 1}, c.negative, c.err)
		var buf bytes.Buffer
		if err := d.Write(&buf); err != nil {
			t.Fatal(err)
		}
		var got struct {
			APIVersion string `json:"apiVersion"`
			ExitCode   int    `json:"exitCode"`
			Result     map[string]int
			Error      *Error `json:"error"`
		}
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v", buf.String(), err)
		}
		if got.ExitCode != c.exit || got.APIVersion != APIVersion || got.Result["n"] != 1 {
			t.Errorf("%s: want exit %d", buf.String(), c.exit)
		}
		if (got.Error == nil) != (c.code == "") || (got.Error != nil && got.Error.Code != c.code) {
			t.Errorf("%s: want error code %q", buf.String(), c.code)
		}
	}
}
