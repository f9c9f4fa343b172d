package coordinator

import "sync"

// groupObserver hands the core's GroupChanged effects to Config.OnGroupChange in order, from its
// own goroutine, so that the observer (which writes a timeline: I/O) never runs under the driver's
// lock nor holds up a request. The queue is unbounded: a slow observer costs memory, not latency.
type groupObserver struct {
	fn func(GroupChanged)

	mu     sync.Mutex
	queue  []GroupChanged
	closed bool
	wake   chan struct{} // capacity 1: something was queued, or close
	done   chan struct{} // closed when the goroutine has delivered everything queued before close
}

func startGroupObserver(fn func(GroupChanged)) *groupObserver {
	o := &groupObserver{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

// add queues ev; after close it is dropped.
func (o *groupObserver) add(ev GroupChanged) {
	o.mu.Lock()
	if !o.closed {
		o.queue = append(o.queue, ev)
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *groupObserver) run() {
	defer close(o.done)
	for range o.wake {
		o.mu.Lock()
		batch, closed := o.queue, o.closed
		o.queue = nil
		o.mu.Unlock()
		for _, ev := range batch {
			o.fn(ev)
		}
		if closed {
			return
		}
	}
}

// close delivers what was queued before it, then stops the goroutine and waits for it.
func (o *groupObserver) close() {
	o.mu.Lock()
	already := o.closed
	o.closed = true
	o.mu.Unlock()
	if !already {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	<-o.done
}
