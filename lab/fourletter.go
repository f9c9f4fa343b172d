package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// FourLetter sends a ZooKeeper four-letter word (ruok, srvr, stat, mntr, cons, wchc, wchp, ...) to
// the server at addr and returns its whole answer (the server closes the connection after it).
// The lab's servers allow every word (4lw.commands.whitelist=*). Errors: dial/write/read failures
// and ctx's deadline (5 s when ctx has none).
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("lab: four-letter word %q is not 4 letters", word)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("lab: %s to %s: %w", word, addr, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	// Unblock the read if ctx is cancelled (not only when its deadline passes).
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(c, word); err != nil {
		return "", fmt.Errorf("lab: %s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return "", fmt.Errorf("lab: %s from %s: %w", word, addr, err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// ParseMntr parses `mntr` output ("key<TAB>value" lines) into key → value for the numeric keys
// (zk_znode_count, zk_watch_count, zk_packets_received, zk_num_alive_connections, ...). Fractional
// values (zk_avg_latency, ...) are truncated toward zero; non-numeric ones (zk_version,
// zk_server_state) are left out: use ParseMntrStrings for those.
func ParseMntr(out string) map[string]int64 {
	m := map[string]int64{}
	for k, v := range ParseMntrStrings(out) {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			m[k] = i
		} else if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			m[k] = int64(f)
		}
	}
	return m
}

// ParseMntrStrings parses `mntr` output into key → raw value (e.g. zk_server_state → "leader").
func ParseMntrStrings(out string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

// ParseWatchesByPath parses `wchp` output — each watched path on its own line, followed by the ids
// of the sessions watching it, one per indented line as 0x-prefixed hex — into path → session ids
// (in the server's order). Session ids are 64-bit; ids with the top bit set come out negative, as
// go-zookeeper's (*zk.Conn).SessionID() gives them.
func ParseWatchesByPath(wchpOut string) map[string][]int64 {
	m := map[string][]int64{}
	path := ""
	sc := bufio.NewScanner(strings.NewReader(wchpOut))
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "":
		case strings.HasPrefix(t, "/") && line == t:
			path = t
			if _, ok := m[path]; !ok {
				m[path] = nil
			}
		case strings.HasPrefix(t, "0x") && path != "":
			if id, err := strconv.ParseUint(t[2:], 16, 64); err == nil {
				m[path] = append(m[path], int64(id))
			}
		}
	}
	return m
}

// ParseSrvrMode returns the "Mode:" of `srvr`/`stat` output: "standalone", "leader", "follower",
// "observer", or "" when the server does not serve (e.g. "This ZooKeeper instance is not currently
// serving requests" without a quorum).
func ParseSrvrMode(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ParseWatchesBySession parses `wchc` output — each session id (0x-prefixed hex) on its own line,
// followed by the paths it watches, one per indented line — into session id → paths.
func ParseWatchesBySession(wchcOut string) map[int64][]string {
	m := map[int64][]string{}
	var sid int64
	have := false
	sc := bufio.NewScanner(strings.NewReader(wchcOut))
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(t, "0x"):
			id, err := strconv.ParseUint(t[2:], 16, 64)
			if have = err == nil; have {
				sid = int64(id)
				if _, ok := m[sid]; !ok {
					m[sid] = nil
				}
			}
		case strings.HasPrefix(t, "/") && have:
			m[sid] = append(m[sid], t)
		}
	}
	return m
}
