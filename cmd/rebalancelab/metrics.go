package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// metricsServer serves Prometheus' text format at /metrics on --metrics-addr.
type metricsServer struct {
	URL  string // http://HOST:PORT/metrics, with the port bound
	srv  *http.Server
	done chan struct{}
}

// serveMetrics listens on addr (HOST:PORT; port 0: any free port) and serves g at /metrics until
// Close. Each scrape gathers anew: the collectors read the components' state then.
func serveMetrics(addr string, g prometheus.Gatherer) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	m := &metricsServer{URL: "http://" + ln.Addr().String() + "/metrics", srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logrus.WithError(err).Warn("metrics server stopped")
		}
	}()
	return m, nil
}

// Close stops the server and waits for it. A nil server does nothing.
func (m *metricsServer) Close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	<-m.done
}

// addMetricsFlag adds --metrics-addr to cmd.
func addMetricsFlag(cmd *cobra.Command, addr *string, what string) {
	cmd.Flags().StringVar(addr, "metrics-addr", "", "serve Prometheus /metrics for "+what+" on HOST:PORT (port 0: any free port); empty: none")
}

// memberMetrics serves one member's collector on addr ("" serves nothing) and logs the URL.
func memberMetrics(addr string, c prometheus.Collector) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	m, err := serveMetrics(addr, reg)
	if err != nil {
		return nil, err
	}
	logrus.WithField("metrics", m.URL).Info("serving Prometheus metrics")
	return m, nil
}
