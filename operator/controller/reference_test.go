package controller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestEveryReasonHasItsTest holds the package to one TestEvent<Reason> per
// reason of the Events reference that concerns PtahSchema (recorded on a
// PtahSchema or on its approvals), and to no test for a reason outside it.
func TestEveryReasonHasItsTest(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "TestEvent") {
				tests[strings.TrimPrefix(fn.Name.Name, "TestEvent")] = true
			}
		}
	}
	want := map[string]bool{}
	for _, r := range v1alpha1.EventReasons {
		if slices.Contains(r.On, v1alpha1.KindPtahSchema) || slices.Contains(r.On, v1alpha1.KindPtahSchemaApproval) {
			want[r.Reason] = true
			if !tests[r.Reason] {
				t.Errorf("no TestEvent%s: the reason concerns PtahSchema and has no test provoking it", r.Reason)
			}
		}
	}
	for name := range tests {
		if !want[name] {
			t.Errorf("TestEvent%s names no PtahSchema reason of the Events reference", name)
		}
	}
	if len(want) != 20 {
		t.Errorf("the reference has %d reasons concerning PtahSchema, the issue counts 20", len(want))
	}
}
