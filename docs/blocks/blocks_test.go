package blocks

import (
	"slices"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	md := "a\n<!-- BEGIN GENERATED ref-x -->\nold\n<!-- END GENERATED ref-x -->\nb\n<!-- BEGIN GENERATED ch1-y -->\nkept\n<!-- END GENERATED ch1-y -->\n"
	got, err := Fill(md, map[string]string{"ref-x": "new"}, func(name string) bool { return !strings.HasPrefix(name, "ref-") })
	if err != nil {
		t.Fatal(err)
	}
	want := "a\n<!-- BEGIN GENERATED ref-x -->\nnew\n<!-- END GENERATED ref-x -->\nb\n<!-- BEGIN GENERATED ch1-y -->\nkept\n<!-- END GENERATED ch1-y -->\n"
	if got != want {
		t.Fatalf("Fill:\n%s\nwant:\n%s", got, want)
	}
	if n := Names(md); !slices.Equal(n, []string{"ref-x", "ch1-y"}) {
		t.Fatalf("Names = %v", n)
	}
	// A block no generator fills and none may leave, a mismatched END, a BEGIN without END: errors,
	// and md comes back unchanged.
	for _, bad := range []string{
		md,
		"<!-- BEGIN GENERATED ref-x -->\nx\n<!-- END GENERATED ref-y -->\n",
		"<!-- BEGIN GENERATED ref-x -->\nx\n",
	} {
		if out, err := Fill(bad, map[string]string{"ref-x": "new"}, nil); err == nil || out != bad {
			t.Errorf("Fill(%q): %q, %v; want an error and the text unchanged", bad, out, err)
		}
	}
}
