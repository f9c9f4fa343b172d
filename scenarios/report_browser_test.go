package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// TestReportInChromium: the HTML report of a real run, loaded in headless Chromium (Debian's
// `chromium`, which make test installs), has one lane per partition per era, and each lane's final
// owner is the owner the result JSON gives for that partition.
func TestReportInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (scripts/deps.sh installs Debian's chromium): %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const partitions = 3
	res, err := Run(ctx, Options{Scenario: "storm", Eras: []string{"zk", "classic"}, Params: Params{Consumers: 2, Partitions: partitions},
		ReportDir: dir, Log: quietLog(), LabLog: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Eras []struct {
			Era       string            `json:"era"`
			EndOwners map[string]string `json:"end_owners"`
		} `json:"eras"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}

	// The flags headless Chromium needs as root on a machine with no network to speak of.
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+filepath.Join(dir, "index.html"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	type lane struct{ topic, partition, owner string }
	lanes := map[string][]lane{} // era -> lanes, in page order
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "div" {
			a := map[string]string{}
			for _, at := range n.Attr {
				a[at.Key] = at.Val
			}
			if strings.Fields(a["class"]) != nil && strings.Fields(a["class"])[0] == "lane" {
				lanes[a["data-era"]] = append(lanes[a["data-era"]], lane{a["data-topic"], a["data-partition"], a["data-final-owner"]})
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)

	if len(parsed.Eras) != 2 {
		t.Fatalf("JSON has %d eras, want 2", len(parsed.Eras))
	}
	for _, e := range parsed.Eras {
		got := lanes[e.Era]
		if len(got) != partitions {
			t.Fatalf("era %s: %d lanes in the rendered page, want %d (one per partition)", e.Era, len(got), partitions)
		}
		for _, l := range got {
			want, ok := e.EndOwners[l.topic+"-"+l.partition]
			if !ok || want == "" {
				t.Fatalf("era %s: the JSON names no owner for %s-%s (end_owners %v)", e.Era, l.topic, l.partition, e.EndOwners)
			}
			if l.owner != want {
				t.Errorf("era %s, lane %s-%s: final owner %q in the page, %q in the JSON", e.Era, l.topic, l.partition, l.owner, want)
			}
		}
	}
}
