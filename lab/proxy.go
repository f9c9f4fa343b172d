package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// toxiServer is the toxiproxy "server" every lab proxy hangs off. Only its metrics container and
// logger are used (no HTTP API is started); toxiproxy's own logs are dropped. zerolog is imported
// for this one value: toxiproxy.NewServer takes a zerolog.Logger by value (and its proxies log
// through it, so a zero Logger, with no writer, would not do), and only zerolog builds a disabled one.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

// Proxy is a TCP fault proxy (toxiproxy v2 used as a library) between clients and one upstream
// address. Faults: Stall, Latency, Cut; Heal undoes them.
//
// Stall and latency are not toxics added and removed on demand: toxiproxy's removal of a toxic flushes
// each connection's held bytes with a 5 s timeout per chunk when the connection's far end is gone (a
// ZooKeeper client that gave up on a stalled connection, a server that expired its session), so a heal
// took seconds longer than the script said, and only on links whose clients redial during a stall.
// Instead every connection runs through one permanent faultToxic per direction that reads the proxy's
// fault state: changing a fault is a state change that takes effect at once on every connection, old
// and new, and held bytes move the moment the state lets them.
type Proxy struct {
	mu     sync.Mutex
	p      *toxiproxy.Proxy
	addr   string
	f      *faults
	cut    bool
	closed bool
}

// faults is a proxy's fault state, read by its faultToxics.
type faults struct {
	mu      sync.Mutex
	stalled bool
	latency time.Duration
	loss    float64       // percent of chunks "lost" (see Proxy.Loss)
	changed chan struct{} // closed (and replaced) on every change of stalled or latency
	// conns is closed when the proxy's connections are closed (Cut, Close) and replaced when it
	// listens again: a toxic waiting on a connection of an older generation drops its bytes and ends.
	conns chan struct{}
}

func (f *faults) state() (stalled bool, latency time.Duration, changed <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stalled, f.latency, f.changed
}

func (f *faults) lossPct() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loss
}

// Loss's retransmission model: a lost segment is sent again after the retransmission timeout, which
// starts at Linux's minimum (TCP_RTO_MIN, 200 ms) and doubles each time the retransmission is lost
// too, up to TCP_RTO_MAX (120 s).
const (
	lossRTOMin = 200 * time.Millisecond
	lossRTOMax = 120 * time.Second
)

// lossDelay draws the extra delay one chunk suffers at loss percent: 0 with probability 1 − p, else
// the sum of the retransmission timeouts until a retransmission gets through (each lost with p).
func lossDelay(pct float64, draw func() float64) time.Duration {
	if pct <= 0 {
		return 0
	}
	p := min(pct, 100) / 100
	var d time.Duration
	for rto := lossRTOMin; draw() < p; rto = min(2*rto, lossRTOMax) {
		d += rto
		if d >= 15*time.Minute { // tcp_retries2's ~15 min: TCP gives up; so does the model (p near 100)
			break
		}
	}
	return d
}

// set changes the state and wakes every toxic; it returns when the change is in force.
func (f *faults) set(fn func(f *faults)) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
	close(f.changed)
	f.changed = make(chan struct{})
	return time.Now()
}

func (f *faults) generation() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// closeConns ends the current connection generation; a new one starts with renewConns.
func (f *faults) closeConns() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.conns:
	default:
		close(f.conns)
	}
}

func (f *faults) renewConns() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.conns:
		f.conns = make(chan struct{})
	default:
	}
}

// faultToxic is the toxic each proxy keeps on both directions of every connection. Upstream
// (client → server) it holds bytes while the proxy is stalled; downstream it also delays each chunk
// until it is `latency` old (as toxiproxy's latency toxic does, from the time the proxy read it).
// Held bytes are delivered in order when the state allows, as TCP retransmission delivers them when
// a partition heals. The toxic is registered under faultToxicType and wired to its proxy's state
// right after it is added, before the proxy listens.
type faultToxic struct {
	f    *faults
	down bool
}

const faultToxicType = "lab_fault"

func init() { toxics.Register(faultToxicType, new(faultToxic)) }

// faultPipeState is one connection direction's state, kept across interruptions of the toxic.
type faultPipeState struct {
	pending *stream.StreamChunk // a chunk read but not yet delivered
	// lossUntil: the pending chunk is "being retransmitted" until then (Proxy.Loss), zero if not lost.
	lossUntil time.Time
	conns     <-chan struct{} // the connection generation this connection belongs to
}

// NewState implements toxics.StatefulToxic: called when a connection starts.
func (t *faultToxic) NewState() any { return &faultPipeState{conns: t.f.generation()} }

// GetBufferSize implements toxics.BufferedToxic: chunks queued in front of the toxic while it holds
// (the reader goes on reading the socket into them; beyond that TCP's own window holds the bytes).
func (t *faultToxic) GetBufferSize() int { return 1024 }

// Pipe implements toxics.Toxic.
func (t *faultToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*faultPipeState)
	for {
		c := st.pending
		st.pending = nil
		if c == nil {
			select {
			case <-stub.Interrupt:
				return
			case <-st.conns:
				t.drop(stub)
				return
			case c = <-stub.Input:
			}
			if c == nil { // the source closed
				stub.Close()
				return
			}
			st.lossUntil = time.Time{}
			if d := lossDelay(t.f.lossPct(), rand.Float64); d > 0 {
				st.lossUntil = time.Now().Add(d)
			}
		}
		if !t.hold(stub, st, c) {
			return
		}
		select {
		case stub.Output <- c:
		case <-stub.Interrupt:
			st.pending = c
			return
		case <-st.conns:
			t.drop(stub)
			return
		}
	}
}

// hold waits until the fault state lets c through. False: the pipe must return (interrupted, or the
// connection closed).
func (t *faultToxic) hold(stub *toxics.ToxicStub, st *faultPipeState, c *stream.StreamChunk) bool {
	for {
		stalled, latency, changed := t.f.state()
		var due <-chan time.Time
		var timer *time.Timer
		if !stalled {
			var until time.Time
			if t.f.lossPct() > 0 { // a heal (loss 0) releases a chunk being "retransmitted" at once
				until = st.lossUntil
			}
			if t.down && latency > 0 && c.Timestamp.Add(latency).After(until) {
				until = c.Timestamp.Add(latency)
			}
			wait := time.Until(until)
			if until.IsZero() || wait <= 0 {
				return true
			}
			timer = time.NewTimer(wait)
			due = timer.C
		}
		pass, done := false, false
		select {
		case <-changed:
		case <-due:
			pass, done = true, true
		case <-stub.Interrupt:
			st.pending = c
			done = true
		case <-st.conns:
			t.drop(stub)
			done = true
		}
		if timer != nil {
			timer.Stop()
		}
		if done {
			return pass
		}
	}
}

// drop discards what the closed connection still holds, until its source's end, and closes the output.
func (t *faultToxic) drop(stub *toxics.ToxicStub) {
	for c := range stub.Input {
		if c == nil {
			break
		}
	}
	stub.Close()
}

// Toxic names, one per direction ("downstream" = upstream server → client).
const (
	toxicFaultUp   = "lab_fault_upstream"
	toxicFaultDown = "lab_fault_downstream"
)

// NewProxy starts a proxy named name that listens on 127.0.0.1:<free port> and forwards every
// accepted connection to upstream (dialled when the client connects; if that dial fails the client's
// connection is closed).
func NewProxy(name, upstream string) (*Proxy, error) { return NewProxyOn(name, "127.0.0.1", upstream) }

// NewProxyOn is NewProxy listening on listenHost (a free port there): the bridge address of test
// hosts (Hosts.BridgeAddr), so that members inside them reach it.
func NewProxyOn(name, listenHost, upstream string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("lab: proxy %s: bad upstream %q: %w", name, upstream, err)
	}
	tp := toxiproxy.NewProxy(toxiServer, name, net.JoinHostPort(listenHost, "0"), upstream)
	f := &faults{changed: make(chan struct{}), conns: make(chan struct{})}
	for _, t := range []struct {
		name, stream string
		down         bool
	}{{toxicFaultUp, "upstream", false}, {toxicFaultDown, "downstream", true}} {
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{}}`, t.name, faultToxicType, t.stream)
		w, err := tp.Toxics.AddToxicJson(strings.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("lab: proxy %s: add %s toxic: %w", name, faultToxicType, err)
		}
		ft := w.Toxic.(*faultToxic)
		ft.f, ft.down = f, t.down
	}
	if err := tp.Start(); err != nil {
		return nil, fmt.Errorf("lab: proxy %s: %w", name, err)
	}
	tp.Lock()
	addr := tp.Listen // the bound address, set by Start
	tp.Unlock()
	return &Proxy{p: tp, addr: addr, f: f}, nil
}

// Addr is the address clients dial, "127.0.0.1:port"; it stays the same across Cut and Heal.
func (p *Proxy) Addr() string { return p.addr }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.p.Upstream }

// Stall makes the proxy accept bytes in both directions and deliver none, while keeping every TCP
// connection open: the peers see silence, not a close, as across a network partition or a hung
// host. New connections are stalled too. The bytes are held, not dropped: Heal delivers them in
// order at once, as TCP retransmission does when a partition heals — so a request sent during the
// stall reaches its server afterwards (a zombie's offset commit arrives, and is judged, once the link
// is back). Bytes already written to a socket when Stall is called still arrive.
func (p *Proxy) Stall() error {
	_, err := p.stall()
	return err
}

// stall is Stall; it also returns when the stall was in force (zero when it already was).
func (p *Proxy) stall() (time.Time, error) {
	return p.setFault(func(f *faults) { f.stalled = true })
}

// setFault changes the proxy's faults with set (unless it is closed) and returns when the change took
// effect.
func (p *Proxy) setFault(set func(*faults)) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return time.Time{}, err
	}
	return p.f.set(set), nil
}

// Latency delays every byte from the upstream to the client by d, counted from when the proxy read
// it, so each request/response round trip takes at least d longer. A new call replaces the previous
// latency at once (bytes already waiting are released when they are d old by the new d); d = 0
// removes it.
func (p *Proxy) Latency(d time.Duration) error {
	_, err := p.setLatency(d)
	return err
}

func (p *Proxy) setLatency(d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, fmt.Errorf("lab: proxy %s: negative latency %v", p.p.Name, d)
	}
	return p.setFault(func(f *faults) { f.latency = d })
}

// Loss makes the proxy lose pct percent of what it forwards, in both directions, as a TCP connection
// sees loss: a proxy has no packets to drop (it reads and writes byte streams; the kernel's TCP below
// it never loses anything on loopback), so each chunk it reads is, with probability pct/100, held for
// a retransmission timeout (200 ms, doubling while the retransmission is lost too, as Linux's RTO
// does) before it goes on, and the bytes behind it on the same connection wait with it (TCP delivers
// in order). The peers therefore see what loss does to a TCP application — stalls of 200 ms and more,
// head-of-line blocking, timeouts when they are long — but no segment is ever missing, the kernel's
// congestion window does not shrink, and near 100 % it is a stall (tcp_retries2's ~15 min cap), not
// resets. A chunk is one read of the socket (up to 32 KiB), not one packet, so the same pct costs fewer
// events than netem's per-packet loss on large transfers. pct 0 removes it; a new call replaces it.
func (p *Proxy) Loss(pct float64) error {
	_, err := p.setLoss(pct)
	return err
}

func (p *Proxy) setLoss(pct float64) (time.Time, error) {
	if pct < 0 || pct > 100 {
		return time.Time{}, fmt.Errorf("lab: proxy %s: loss %v%%: want 0..100", p.p.Name, pct)
	}
	return p.setFault(func(f *faults) { f.loss = pct })
}

// Cut disables the proxy: its listener closes (new connections are refused) and every open
// connection is closed; bytes a stall held on them are dropped. Heal re-enables it on the same address.
func (p *Proxy) Cut() error {
	_, err := p.cutNow()
	return err
}

func (p *Proxy) cutNow() (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return time.Time{}, err
	}
	if !p.cut {
		p.p.Stop()
		p.f.closeConns()
		p.cut = true
	}
	return time.Now(), nil
}

// Heal removes every fault: bytes held by a stall or a latency are delivered at once, in order, on the
// same connections, and a cut proxy listens again on its address. Errors: the address was taken
// meanwhile, or Close was called.
func (p *Proxy) Heal() error {
	_, err := p.heal()
	return err
}

// heal is Heal; it also returns when the proxy was healed.
func (p *Proxy) heal() (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return time.Time{}, err
	}
	at := p.f.set(func(f *faults) { f.stalled, f.latency, f.loss = false, 0, 0 })
	if p.cut {
		p.f.renewConns()
		if err := p.p.Start(); err != nil {
			return time.Time{}, fmt.Errorf("lab: proxy %s: listen again on %s: %w", p.p.Name, p.addr, err)
		}
		p.cut = false
		at = time.Now()
	}
	return at, nil
}

// Close stops the proxy for good (listener and connections closed, held bytes dropped). Safe to call
// twice.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.p.Stop()
	p.f.closeConns()
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

// Link names one of a member's connections to the outside (docs/design.md "per-member proxies"):
// timeline.Link, whose names the fault records carry.
type Link = timeline.Link

// The links (timeline's).
const (
	LinkZooKeeper   = timeline.LinkZooKeeper
	LinkCoordinator = timeline.LinkCoordinator
	LinkFetch       = timeline.LinkFetch
)

// linkState is the fault set on a link; it applies to the link's proxies of now and of later.
type linkState struct {
	stalled bool
	cut     bool
	latency time.Duration
	loss    float64
}

// The faults a FaultEvent reports (timeline's link faults).
const (
	FaultStall   = timeline.FaultStall
	FaultCut     = timeline.FaultCut
	FaultLatency = timeline.FaultLatency
	FaultLoss    = timeline.FaultLoss
)

// FaultEvent says when a fault really came into force on a member's link, or left it: the moment
// every proxy of the link had it (a stall or latency is in force when the proxies' state changed —
// the next byte they read is held; a cut when the listeners and connections were closed; a heal when
// held bytes were released and cut proxies listen again). With no proxy yet it is the moment the
// link's state changed (the proxies created later start with it).
type FaultEvent struct {
	Link    Link
	Fault   string        // FaultStall, FaultCut or FaultLatency
	Latency time.Duration // FaultLatency: the delay
	LossPct float64       // FaultLoss: the percentage
	Begin   bool          // true: in force from At; false: over at At
	At      time.Time
}

// MemberLinks gives one member its own fault proxies: for each (link, upstream address) a proxy is
// created on first dial, so faults on one member's link leave other members and links alone. A fault
// set on a link applies to its current proxies and to those created later. Links made by
// NewMemberLinksFor proxy only the links named there; the others dial their upstream directly and
// cost nothing (no listener, no copying goroutines), and a fault on them is an error.
type MemberLinks struct {
	name    string
	proxied map[Link]bool // nil: every link
	listen  string        // the proxies' listen host ("": 127.0.0.1)

	mu      sync.Mutex
	proxies map[Link]map[string]*Proxy // link → upstream → proxy
	state   map[Link]linkState
	closed  bool

	observeMu sync.Mutex // serialises observer calls, so they arrive in order
	observer  func(FaultEvent)
}

// OnFault makes fn receive a FaultEvent for every fault that comes into force or ends on any of the
// member's links, in order, after the change (never under the links' lock). Call it before the first
// fault; nil stops the events.
func (m *MemberLinks) OnFault(fn func(FaultEvent)) {
	m.observeMu.Lock()
	defer m.observeMu.Unlock()
	m.observer = fn
}

// NewMemberLinks returns an empty set of links for the member called name (used in proxy names),
// every link of which goes through a proxy and can be faulted.
func NewMemberLinks(name string) *MemberLinks {
	return &MemberLinks{name: name, proxies: map[Link]map[string]*Proxy{}, state: map[Link]linkState{}}
}

// NewMemberLinksFor is NewMemberLinks for a member whose faults are known in advance: only the links
// in faulted get proxies; the others dial directly. With none, the member has no proxy at all.
func NewMemberLinksFor(name string, faulted ...Link) *MemberLinks {
	m := NewMemberLinks(name)
	m.proxied = map[Link]bool{}
	for _, l := range faulted {
		m.proxied[l] = true
	}
	return m
}

// ListenOn makes the proxies created from now on listen on host instead of 127.0.0.1 (members in
// test hosts reach this process at Hosts.BridgeAddr).
func (m *MemberLinks) ListenOn(host string) {
	m.mu.Lock()
	m.listen = host
	m.mu.Unlock()
}

// Proxied reports whether link l goes through proxies (and can be faulted).
func (m *MemberLinks) Proxied(l Link) bool { return m.proxied == nil || m.proxied[l] }

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
	listen := m.listen
	if listen == "" {
		listen = "127.0.0.1"
	}
	p, err := NewProxyOn(fmt.Sprintf("%s/%s/%s", m.name, l, upstream), listen, upstream)
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
	if s.loss > 0 {
		if err := p.Loss(s.loss); err != nil {
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

// Dialer returns a wire.DialFunc that dials the member's proxy for (l, addr) instead of addr (addr
// itself for a link that is not Proxied). A cut link refuses the connection; a stalled one connects
// and then stays silent. After Close it fails with ErrProxyClosed.
func (m *MemberLinks) Dialer(l Link) wire.DialFunc {
	if !m.Proxied(l) {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			m.mu.Lock()
			closed := m.closed
			m.mu.Unlock()
			if closed {
				return nil, ErrProxyClosed
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
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

// update changes l's state and applies fn to each of its current proxies. It reports the events
// events(old, new, at) describes, at the latest time one of fn's calls returned (or now, with no
// proxy).
func (m *MemberLinks) update(l Link, st func(*linkState), fn func(*Proxy) (time.Time, error)) error {
	if !m.Proxied(l) {
		return fmt.Errorf("lab: member %s: link %s dials directly, with no proxy to fault (NewMemberLinksFor named only the links its faults use)", m.name, l)
	}
	m.observeMu.Lock()
	defer m.observeMu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrProxyClosed
	}
	old := m.state[l]
	s := old
	st(&s)
	m.state[l] = s
	at := time.Now()
	var errs []error
	for _, p := range m.proxies[l] {
		t, err := fn(p)
		if err != nil {
			errs = append(errs, err)
		}
		if t.After(at) {
			at = t
		}
	}
	m.mu.Unlock()
	if m.observer != nil {
		for _, ev := range changes(l, old, s, at) {
			m.observer(ev)
		}
	}
	return errors.Join(errs...)
}

// changes lists the faults that ended (first) and began going from old to new.
func changes(l Link, old, new linkState, at time.Time) []FaultEvent {
	var out []FaultEvent
	ev := func(fault string, lat time.Duration, begin bool) {
		out = append(out, FaultEvent{Link: l, Fault: fault, Latency: lat, Begin: begin, At: at})
	}
	loss := func(pct float64, begin bool) {
		out = append(out, FaultEvent{Link: l, Fault: FaultLoss, LossPct: pct, Begin: begin, At: at})
	}
	if old.latency > 0 && old.latency != new.latency {
		ev(FaultLatency, old.latency, false)
	}
	if old.loss > 0 && old.loss != new.loss {
		loss(old.loss, false)
	}
	if old.stalled && !new.stalled {
		ev(FaultStall, 0, false)
	}
	if old.cut && !new.cut {
		ev(FaultCut, 0, false)
	}
	if new.latency > 0 && old.latency != new.latency {
		ev(FaultLatency, new.latency, true)
	}
	if new.loss > 0 && old.loss != new.loss {
		loss(new.loss, true)
	}
	if new.stalled && !old.stalled {
		ev(FaultStall, 0, true)
	}
	if new.cut && !old.cut {
		ev(FaultCut, 0, true)
	}
	return out
}

// Stall stalls link l (see Proxy.Stall) now and for proxies created later.
func (m *MemberLinks) Stall(l Link) error {
	return m.update(l, func(s *linkState) { s.stalled = true }, (*Proxy).stall)
}

// Latency sets link l's added latency (see Proxy.Latency) now and for proxies created later.
func (m *MemberLinks) Latency(l Link, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("lab: negative latency %v", d)
	}
	return m.update(l, func(s *linkState) { s.latency = d }, func(p *Proxy) (time.Time, error) { return p.setLatency(d) })
}

// Loss sets link l's loss (see Proxy.Loss) now and for proxies created later; 0 removes it.
func (m *MemberLinks) Loss(l Link, pct float64) error {
	if pct < 0 || pct > 100 {
		return fmt.Errorf("lab: loss %v%%: want 0..100", pct)
	}
	return m.update(l, func(s *linkState) { s.loss = pct }, func(p *Proxy) (time.Time, error) { return p.setLoss(pct) })
}

// Cut cuts link l (see Proxy.Cut) now and for proxies created later.
func (m *MemberLinks) Cut(l Link) error {
	return m.update(l, func(s *linkState) { s.cut = true }, (*Proxy).cutNow)
}

// Heal removes every fault of link l (see Proxy.Heal).
func (m *MemberLinks) Heal(l Link) error {
	return m.update(l, func(s *linkState) { *s = linkState{} }, (*Proxy).heal)
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

// ProxyAddr returns the address of the member's proxy for (l, upstream), creating the proxy (with l's
// current faults) when it does not exist yet: a member in another process dials it instead of
// upstream (Route). A link that is not Proxied answers upstream itself.
func (m *MemberLinks) ProxyAddr(l Link, upstream string) (string, error) {
	if !m.Proxied(l) {
		return upstream, nil
	}
	p, err := m.proxyFor(l, upstream)
	if err != nil {
		return "", err
	}
	return p.Addr(), nil
}

// Route sends a link's connections to Upstream through Proxy: how a member running in another process
// (`rebalancelab member --route`) reaches the fault proxies the runner owns.
type Route struct {
	Link     Link
	Upstream string // host:port the member would dial
	Proxy    string // host:port it dials instead
}

// String is the --route form, LINK:UPSTREAM=PROXY ("fetch:127.0.0.1:9092=127.0.0.1:40111").
func (r Route) String() string { return fmt.Sprintf("%s:%s=%s", r.Link, r.Upstream, r.Proxy) }

// ParseRoute parses Route.String's form.
func ParseRoute(s string) (Route, error) {
	link, rest, ok := strings.Cut(s, ":")
	up, proxy, ok2 := strings.Cut(rest, "=")
	if !ok || !ok2 {
		return Route{}, fmt.Errorf("route %q: want LINK:UPSTREAM=PROXY (e.g. fetch:127.0.0.1:9092=127.0.0.1:40111)", s)
	}
	switch Link(link) {
	case LinkZooKeeper, LinkCoordinator, LinkFetch:
	default:
		return Route{}, fmt.Errorf("route %q: unknown link %q (want %s, %s or %s)", s, link, LinkZooKeeper, LinkCoordinator, LinkFetch)
	}
	for _, a := range []string{up, proxy} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return Route{}, fmt.Errorf("route %q: %w", s, err)
		}
	}
	return Route{Link: Link(link), Upstream: up, Proxy: proxy}, nil
}

// RoutedLinks are the dialers of a member whose proxies live in another process (the runner's): a
// dial of (link, upstream) with a Route goes to its proxy, every other dial goes to its address
// directly (OnUnrouted, when set, hears of each such dial of a link that has routes: a fault on it
// would not reach that connection).
type RoutedLinks struct {
	routes     map[Link]map[string]string
	OnUnrouted func(l Link, addr string)
}

// NewRoutedLinks returns the dialers for routes.
func NewRoutedLinks(routes []Route) *RoutedLinks {
	r := &RoutedLinks{routes: map[Link]map[string]string{}}
	for _, rt := range routes {
		if r.routes[rt.Link] == nil {
			r.routes[rt.Link] = map[string]string{}
		}
		r.routes[rt.Link][rt.Upstream] = rt.Proxy
	}
	return r
}

// Dialer is MemberLinks.Dialer's counterpart: addr mapped through l's routes.
func (r *RoutedLinks) Dialer(l Link) wire.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to := addr
		if p, ok := r.routes[l][addr]; ok {
			to = p
		} else if len(r.routes[l]) > 0 && r.OnUnrouted != nil {
			r.OnUnrouted(l, addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
}

// ZKDialer is Dialer(LinkZooKeeper) in go-zookeeper's shape, for zk.WithDialer.
func (r *RoutedLinks) ZKDialer() zk.Dialer {
	dial := r.Dialer(LinkZooKeeper)
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
