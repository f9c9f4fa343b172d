package spec

import (
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestEraMethods: each era's consumer, assignor, protocol and membership, as the members configure them.
func TestEraMethods(t *testing.T) {
	for _, c := range []struct {
		era                     Era
		zk, coordinated, static bool
		assignor, protocol      string
		known, implemented      bool
	}{
		{ZK, true, false, false, "range", "eager", true, true},
		{Classic, false, true, false, "range", "eager", true, true},
		{Cooperative, false, true, false, "cooperative-sticky", "cooperative", true, true},
		{Static, false, true, true, "range", "eager", true, true},
		{KIP848, false, true, false, "", "cooperative", true, false},
		{Era("eager"), false, false, false, "", "", false, false},
	} {
		if got := c.era.UsesZooKeeper(); got != c.zk {
			t.Errorf("%s.UsesZooKeeper() = %v, want %v", c.era, got, c.zk)
		}
		if got := c.era.Coordinated(); got != c.coordinated {
			t.Errorf("%s.Coordinated() = %v, want %v", c.era, got, c.coordinated)
		}
		if got := c.era.Static(); got != c.static {
			t.Errorf("%s.Static() = %v, want %v", c.era, got, c.static)
		}
		if got := c.era.Assignor(); got != c.assignor {
			t.Errorf("%s.Assignor() = %q, want %q", c.era, got, c.assignor)
		}
		if got := c.era.Protocol(); got != c.protocol {
			t.Errorf("%s.Protocol() = %q, want %q", c.era, got, c.protocol)
		}
		if c.era.Known() != c.known || c.era.Implemented() != c.implemented {
			t.Errorf("%s: Known %v Implemented %v, want %v %v", c.era, c.era.Known(), c.era.Implemented(), c.known, c.implemented)
		}
	}
}

// TestCoordinationLink: the zk era coordinates over its ZooKeeper link, the others over the
// coordinator's connection.
func TestCoordinationLink(t *testing.T) {
	for era, want := range map[Era]timeline.Link{ZK: timeline.LinkZooKeeper, Classic: timeline.LinkCoordinator,
		Cooperative: timeline.LinkCoordinator, Static: timeline.LinkCoordinator} {
		if got := era.CoordinationLink(); got != want {
			t.Errorf("%s.CoordinationLink() = %q, want %q", era, got, want)
		}
	}
}

// TestParseEras: "all", lists, repeats kept once in the order given; kip848 and unknown names refused
// with the implemented eras listed.
func TestParseEras(t *testing.T) {
	eras, err := ParseEras([]string{"all"})
	if err != nil || strings.Join(Names(eras), ",") != "zk,classic,cooperative,static" {
		t.Fatalf("all: %v %v", eras, err)
	}
	if eras, err := ParseEras(nil); err != nil || len(eras) != 4 {
		t.Fatalf("none: %v %v", eras, err)
	}
	if eras, err := ParseEras([]string{"static, zk", "zk"}); err != nil || strings.Join(Names(eras), ",") != "static,zk" {
		t.Fatalf("static,zk: %v %v", eras, err)
	}
	_, err = ParseEras([]string{"kip848"})
	if want := "era kip848 is not implemented yet (implemented: zk, classic, cooperative, static, or all)"; err == nil || err.Error() != want {
		t.Errorf("kip848: %v, want %q", err, want)
	}
	_, err = ParseEras([]string{"zk,eager"})
	if want := `unknown era "eager" (implemented: zk, classic, cooperative, static, or all)`; err == nil || err.Error() != want {
		t.Errorf("eager: %v, want %q", err, want)
	}
	for names, want := range map[string]string{
		"":     "an empty era name (implemented: zk, classic, cooperative, static, or all)",
		"zk,":  `an empty era name in "zk," (implemented: zk, classic, cooperative, static, or all)`,
		"zk; ": "an empty era name (implemented: zk, classic, cooperative, static, or all)",
	} {
		_, err = ParseEras(strings.Split(names, ";"))
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", names, err, want)
		}
	}
	if _, err := ParseEra("eager"); err == nil || err.Error() != `unknown era "eager" (implemented: zk, classic, cooperative, static)` {
		t.Errorf("ParseEra(eager): %v (one era: no \"or all\")", err)
	}
	if e, err := ParseEra(" cooperative "); err != nil || e != Cooperative {
		t.Errorf("ParseEra(cooperative) = %q, %v", e, err)
	}
}
