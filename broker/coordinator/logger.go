package coordinator

import "fmt"

// Logger receives the core's log lines (Kafka's wording) at four levels. keyvals are the line's
// fields as alternating keys and values: "group" (string), "generation" (int32), "member" (string),
// "partition" (int32) and "error" (error). *slog.Logger satisfies it; Start adapts the broker's
// *logrus.Entry to it. The core calls it from Step and the other entry points, under the caller's
// serialisation (the core is not safe for concurrent use).
type Logger interface {
	Debug(msg string, keyvals ...any)
	Info(msg string, keyvals ...any)
	Warn(msg string, keyvals ...any)
	Error(msg string, keyvals ...any)
}

// logLine is one line being written: the core's logger (nil: no logging, nothing formatted) and
// the fields so far.
type logLine struct {
	l  Logger
	kv []any
}

// logWith starts a line with the fields keyvals.
func (c *Core) logWith(keyvals ...any) logLine { return logLine{c.log, keyvals} }

// logGroup starts a line about group g: fields group and generation, then keyvals.
func (c *Core) logGroup(g *group, keyvals ...any) logLine {
	return logLine{c.log, append([]any{"group", g.id, "generation", g.generation}, keyvals...)}
}

func (e logLine) Debug(msg string) { e.print(Logger.Debug, msg) }
func (e logLine) Info(msg string)  { e.print(Logger.Info, msg) }
func (e logLine) Warn(msg string)  { e.print(Logger.Warn, msg) }
func (e logLine) Error(msg string) { e.print(Logger.Error, msg) }

func (e logLine) Debugf(format string, args ...any) { e.printf(Logger.Debug, format, args...) }
func (e logLine) Infof(format string, args ...any)  { e.printf(Logger.Info, format, args...) }
func (e logLine) Warnf(format string, args ...any)  { e.printf(Logger.Warn, format, args...) }
func (e logLine) Errorf(format string, args ...any) { e.printf(Logger.Error, format, args...) }

func (e logLine) print(level func(Logger, string, ...any), msg string) {
	if e.l != nil {
		level(e.l, msg, e.kv...)
	}
}

func (e logLine) printf(level func(Logger, string, ...any), format string, args ...any) {
	if e.l != nil {
		level(e.l, fmt.Sprintf(format, args...), e.kv...)
	}
}
