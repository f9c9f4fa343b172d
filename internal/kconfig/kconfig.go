// Package kconfig parses numeric configuration values the way Kafka reads them: a key has a type
// (ConfigDef.Type INT, LONG or SHORT: Java's int, long, short; 0.8.2's VerifiableProperties.getInt
// reads INT) and, where Kafka's definition has a validator, a range (ConfigDef.Range.atLeast /
// between). Every config parser of the project (zkconsumer, newconsumer, broker and its
// coordinator) uses these, so a value outside its type (3000000000 for an INT) or its range is
// refused with the same message, naming the key, the type and the allowed range, before anything
// connects — never truncated or overflowed into a different number.
package kconfig

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Type is a numeric ConfigDef.Type.
type Type int

// The numeric types of Kafka's ConfigDef.
const (
	Short Type = iota // SHORT: Java short, 16 bits
	Int               // INT: Java int, 32 bits
	Long              // LONG: Java long, 64 bits
)

func (t Type) String() string {
	switch t {
	case Short:
		return "SHORT"
	case Int:
		return "INT"
	}
	return "LONG"
}

// bits is the type's width.
func (t Type) bits() int {
	switch t {
	case Short:
		return 16
	case Int:
		return 32
	}
	return 64
}

// bounds is the type's own range.
func (t Type) bounds() (int64, int64) {
	switch t {
	case Short:
		return math.MinInt16, math.MaxInt16
	case Int:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// Range is a key's allowed values within its type (ConfigDef.Range); the zero Range allows the whole
// type (a key Kafka defines without a validator).
type Range struct {
	min, max       int64
	hasMin, hasMax bool
}

// Any allows every value of the type.
var Any = Range{}

// AtLeast is ConfigDef.Range.atLeast(n).
func AtLeast(n int64) Range { return Range{min: n, hasMin: true} }

// Between is ConfigDef.Range.between(lo, hi), both inclusive.
func Between(lo, hi int64) Range { return Range{min: lo, max: hi, hasMin: true, hasMax: true} }

// Bounds is r within type t: the smallest and largest allowed values.
func (r Range) Bounds(t Type) (lo, hi int64) {
	lo, hi = t.bounds()
	if r.hasMin && r.min > lo {
		lo = r.min
	}
	if r.hasMax && r.max < hi {
		hi = r.max
	}
	return lo, hi
}

// Error is a value a key does not accept. Its message follows Kafka's ConfigException ("Invalid value
// V for configuration K: ...") and always states the type and the allowed range.
type Error struct {
	Key, Value string
	Type       Type
	Lo, Hi     int64 // the allowed range, inclusive
	NotNumber  bool  // the value is no integer of the type at all (else: out of the allowed range)
}

func (e *Error) Error() string {
	if e.NotNumber {
		return fmt.Sprintf("Invalid value %s for configuration %s: not a number of type %s (%d-bit signed integer); allowed range [%d, %d]",
			e.Value, e.Key, e.Type, e.Type.bits(), e.Lo, e.Hi)
	}
	return fmt.Sprintf("Invalid value %s for configuration %s: type %s, allowed range [%d, %d]", e.Value, e.Key, e.Type, e.Lo, e.Hi)
}

// Parse reads value (surrounding spaces ignored) as type t and checks it against r. Errors are *Error.
func Parse(key, value string, t Type, r Range) (int64, error) {
	lo, hi := r.Bounds(t)
	v := strings.TrimSpace(value)
	n, err := strconv.ParseInt(v, 10, t.bits())
	if err != nil {
		return 0, &Error{Key: key, Value: v, Type: t, Lo: lo, Hi: hi, NotNumber: true}
	}
	if n < lo || n > hi {
		return 0, &Error{Key: key, Value: v, Type: t, Lo: lo, Hi: hi}
	}
	return n, nil
}

// Check is Parse's range check for a value already held (a Config built in code rather than parsed):
// the same *Error for the same value.
func Check(key string, n int64, t Type, r Range) error {
	lo, hi := r.Bounds(t)
	if n < lo || n > hi {
		return &Error{Key: key, Value: strconv.FormatInt(n, 10), Type: t, Lo: lo, Hi: hi}
	}
	return nil
}

// ParseInt is Parse for an INT.
func ParseInt(key, value string, r Range) (int32, error) {
	n, err := Parse(key, value, Int, r)
	return int32(n), err
}

// ParseLong is Parse for a LONG.
func ParseLong(key, value string, r Range) (int64, error) {
	return Parse(key, value, Long, r)
}

// Millis is n milliseconds as a time.Duration, saturating at the largest Duration (about 292 years)
// instead of wrapping: a LONG of milliseconds such as Long.MAX_VALUE means "forever" in Kafka.
func Millis(n int64) time.Duration {
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case n > maxMs:
		return time.Duration(math.MaxInt64)
	case n < -maxMs:
		return time.Duration(math.MinInt64)
	}
	return time.Duration(n) * time.Millisecond
}
