package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"

	"github.com/rebalancelab/rebalancelab/wire"
)

// toxiServer is the toxiproxy "server" every lab proxy hangs off. Only its metrics container and
// logger are used (no HTTP API is started); toxiproxy's own logs are dropped.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

// Proxy is a TCP fault proxy (toxiproxy v2 used as a library) between clients and one upstream
// address. Faults: Stall, Latency, Cut; Heal undoes them.
type Proxy struct {
	mu      sync.Mutex
	p       *toxiproxy.Proxy
	addr    string
	cut     bool
	stalled bool
	latency time.Duration
	closed  bool
}

// Toxic names, one per (fault, direction). "downstream" = upstream server → client.
const (
	toxicStallUp   = "lab_stall_upstream"
	toxicStallDown = "lab_stall_downstream"
	toxicLatency   = "lab_latency_downstream"
)

// NewProxy starts a proxy named name that listens on 127.0.0.1:<free port> and forwards every
// accepted connection to upstream (dialled when the client connects; if that dial fails the client's
// connection is closed).
func NewProxy(name, upstream string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("lab: proxy %s: bad upstream %q: %w", name, upstream, err)
	}
	tp := toxiproxy.NewProxy(toxiServer, name, "127.0.0.1:0", upstream)
	if err := tp.Start(); err != nil {
		return nil, fmt.Errorf("lab: proxy %s: %w", name, err)
	}
	tp.Lock()
	addr := tp.Listen // the bound address, set by Start
	tp.Unlock()
	return &Proxy{p: tp, addr: addr}, nil
}

// Addr is the address clients dial, "127.0.0.1:port"; it stays the same across Cut and Heal.
func (p *Proxy) Addr() string { return p.addr }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.p.Upstream }

// Stall makes the proxy accept bytes in both directions and deliver none, while keeping every TCP
// connection open: the peers see silence, not a close, as across a network partition or a hung
// host. New connections are stalled too. The bytes are held, not dropped (toxiproxy's "latency"
// toxic with a delay of stallDelay, in each direction): Heal delivers them in order, as TCP
// retransmission does when a partition heals — so a request sent during the stall reaches its server
// afterwards (a zombie's offset commit arrives, and is judged, once the link is back).
func (p *Proxy) Stall() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return err
	}
	if p.stalled {
		return nil
	}
	attrs := fmt.Sprintf(`{"latency":%d,"jitter":0}`, stallDelay.Milliseconds())
	for _, t := range []struct{ name, stream string }{{toxicStallUp, "upstream"}, {toxicStallDown, "downstream"}} {
		if err := p.addToxic(t.name, "latency", t.stream, attrs); err != nil {
			return err
		}
	}
	p.stalled = true
	return nil
}

// stallDelay is longer than any run: a stalled byte moves only when Heal removes the toxic.
const stallDelay = 24 * time.Hour

// Latency delays every byte from the upstream to the client by d (toxiproxy's "latency" toxic on the
// downstream direction), so each request/response round trip takes at least d longer. A new call
// replaces the previous latency; d = 0 removes it.
func (p *Proxy) Latency(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("lab: proxy %s: negative latency %v", p.p.Name, d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return err
	}
	if p.latency > 0 {
		if err := p.p.Toxics.RemoveToxic(context.Background(), toxicLatency); err != nil {
			return fmt.Errorf("lab: proxy %s: remove latency: %w", p.p.Name, err)
		}
		p.latency = 0
	}
	if d == 0 {
		return nil
	}
	// toxiproxy counts in whole ms: round up so the delay is never below d.
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if err := p.addToxic(toxicLatency, "latency", "downstream", fmt.Sprintf(`{"latency":%d,"jitter":0}`, ms)); err != nil {
		return err
	}
	p.latency = d
	return nil
}

// Cut disables the proxy: its listener closes (new connections are refused) and every open
// connection is closed. Heal re-enables it on the same address.
func (p *Proxy) Cut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return err
	}
	if !p.cut {
		p.p.Stop()
		p.cut = true
	}
	return nil
}

// Heal removes every fault: toxics are removed (bytes held by a stall are delivered, in order, on
// the same connections) and a cut proxy listens again on its address. Errors: the address was taken meanwhile, or Close was called.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return err
	}
	p.p.Toxics.ResetToxics(context.Background())
	p.stalled, p.latency = false, 0
	if p.cut {
		if err := p.p.Start(); err != nil {
			return fmt.Errorf("lab: proxy %s: listen again on %s: %w", p.p.Name, p.addr, err)
		}
		p.cut = false
	}
	return nil
}

// Close stops the proxy for good (listener and connections closed). Safe to call twice.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.p.Toxics.ResetToxics(context.Background())
	p.p.Stop()
	return nil
}

// ErrProxyClosed is returned by a fault method of a closed Proxy or MemberLinks.
var ErrProxyClosed = errors.New("lab: proxy closed")

func (p *Proxy) usable() error {
	if p.closed {
		return ErrProxyClosed
	}
	return nil
}

func (p *Proxy) addToxic(name, typ, stream, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("lab: proxy %s: add %s toxic: %w", p.p.Name, typ, err)
	}
	return nil
}

// Link names one of a member's connections to the outside (DESIGN.md "per-member proxies").
type Link string

const (
	LinkZooKeeper   Link = "zookeeper"   // the member's ZooKeeper session (zkconsumer)
	LinkCoordinator Link = "coordinator" // the newconsumer's connection to its group coordinator
	LinkFetch       Link = "fetch"       // fetch/metadata/produce connections to brokers
)

// linkState is the fault set on a link; it applies to the link's proxies of now and of later.
type linkState struct {
	stalled bool
	cut     bool
	latency time.Duration
}

// MemberLinks gives one member its own fault proxies: for each (link, upstream address) a proxy is
// created on first dial, so faults on one member's link leave other members and links alone. A fault
// set on a link applies to its current proxies and to those created later.
type MemberLinks struct {
	name string

	mu      sync.Mutex
	proxies map[Link]map[string]*Proxy // link → upstream → proxy
	state   map[Link]linkState
	closed  bool
}

// NewMemberLinks returns an empty set of links for the member called name (used in proxy names).
func NewMemberLinks(name string) *MemberLinks {
	return &MemberLinks{name: name, proxies: map[Link]map[string]*Proxy{}, state: map[Link]linkState{}}
}

// proxyFor returns the proxy of (l, upstream), creating it (with l's current faults) on first use.
func (m *MemberLinks) proxyFor(l Link, upstream string) (*Proxy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrProxyClosed
	}
	if p := m.proxies[l][upstream]; p != nil {
		return p, nil
	}
	p, err := NewProxy(fmt.Sprintf("%s/%s/%s", m.name, l, upstream), upstream)
	if err != nil {
		return nil, err
	}
	if err := applyState(p, m.state[l]); err != nil {
		p.Close()
		return nil, err
	}
	if m.proxies[l] == nil {
		m.proxies[l] = map[string]*Proxy{}
	}
	m.proxies[l][upstream] = p
	return p, nil
}

func applyState(p *Proxy, s linkState) error {
	if s.latency > 0 {
		if err := p.Latency(s.latency); err != nil {
			return err
		}
	}
	if s.stalled {
		if err := p.Stall(); err != nil {
			return err
		}
	}
	if s.cut {
		return p.Cut()
	}
	return nil
}

// Proxy returns the proxy of (l, upstream) if one was created, else nil.
func (m *MemberLinks) Proxy(l Link, upstream string) *Proxy {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proxies[l][upstream]
}

// Dialer returns a wire.DialFunc that dials the member's proxy for (l, addr) instead of addr.
// A cut link refuses the connection; a stalled one connects and then stays silent.
func (m *MemberLinks) Dialer(l Link) wire.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		p, err := m.proxyFor(l, addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, p.Addr())
	}
}

// ZKDialer is Dialer(LinkZooKeeper) in go-zookeeper's shape, for zk.WithDialer.
func (m *MemberLinks) ZKDialer() zk.Dialer {
	dial := m.Dialer(LinkZooKeeper)
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return dial(ctx, network, address)
	}
}

// update changes l's state and applies fn to each of its current proxies.
func (m *MemberLinks) update(l Link, st func(*linkState), fn func(*Proxy) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrProxyClosed
	}
	s := m.state[l]
	st(&s)
	m.state[l] = s
	var errs []error
	for _, p := range m.proxies[l] {
		if err := fn(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stall stalls link l (see Proxy.Stall) now and for proxies created later.
func (m *MemberLinks) Stall(l Link) error {
	return m.update(l, func(s *linkState) { s.stalled = true }, (*Proxy).Stall)
}

// Latency sets link l's added latency (see Proxy.Latency) now and for proxies created later.
func (m *MemberLinks) Latency(l Link, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("lab: negative latency %v", d)
	}
	return m.update(l, func(s *linkState) { s.latency = d }, func(p *Proxy) error { return p.Latency(d) })
}

// Cut cuts link l (see Proxy.Cut) now and for proxies created later.
func (m *MemberLinks) Cut(l Link) error {
	return m.update(l, func(s *linkState) { s.cut = true }, (*Proxy).Cut)
}

// Heal removes every fault of link l (see Proxy.Heal).
func (m *MemberLinks) Heal(l Link) error {
	return m.update(l, func(s *linkState) { *s = linkState{} }, (*Proxy).Heal)
}

// Close closes every proxy of the member; dialers fail afterwards with ErrProxyClosed.
func (m *MemberLinks) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var errs []error
	for _, ps := range m.proxies {
		for _, p := range ps {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}
