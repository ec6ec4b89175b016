package host

import "testing"

func TestCapBndDecidesTheWrapper(t *testing.T) {
	for _, c := range []struct {
		capbnd string
		lacks  bool
	}{
		{"000001fffeffffff", true},  // this project's VMs: bit 24 cleared
		{"000001ffffffffff", false}, // a full bounding set
		{"0000000001000000", false}, // only CAP_SYS_RESOURCE
	} {
		got, err := lacksSysResource("Name:\tlab\nCapBnd:\t" + c.capbnd + "\nCapAmb:\t0\n")
		if err != nil || got != c.lacks {
			t.Errorf("CapBnd %s: lacks = %v, %v; want %v", c.capbnd, got, err, c.lacks)
		}
	}
	if _, err := lacksSysResource("Name:\tlab\n"); err == nil {
		t.Error("a status without CapBnd was accepted")
	}
}
