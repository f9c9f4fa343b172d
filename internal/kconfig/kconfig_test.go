package kconfig

import (
	"errors"
	"math"
	"testing"
	"time"
)

// The one checked parse every config parser uses: Kafka's type bounds, then the key's range, one
// message naming key, type and allowed range; Check gives the same error for a held value.
func TestCLIBadInputKConfigParse(t *testing.T) {
	for _, c := range []struct {
		value string
		typ   Type
		r     Range
		want  int64
		err   string
	}{
		{" 6000 ", Int, AtLeast(1), 6000, ""},
		{"2147483647", Int, Any, math.MaxInt32, ""},
		{"-2147483648", Int, Any, math.MinInt32, ""},
		{"9223372036854775807", Long, AtLeast(0), math.MaxInt64, ""},
		{"32767", Short, AtLeast(1), math.MaxInt16, ""},
		{"3000000000", Int, AtLeast(1), 0, "Invalid value 3000000000 for configuration k: not a number of type INT (32-bit signed integer); allowed range [1, 2147483647]"},
		{"2147483648", Int, Any, 0, "Invalid value 2147483648 for configuration k: not a number of type INT (32-bit signed integer); allowed range [-2147483648, 2147483647]"},
		{"9223372036854775808", Long, AtLeast(-1), 0, "Invalid value 9223372036854775808 for configuration k: not a number of type LONG (64-bit signed integer); allowed range [-1, 9223372036854775807]"},
		{"32768", Short, AtLeast(1), 0, "Invalid value 32768 for configuration k: not a number of type SHORT (16-bit signed integer); allowed range [1, 32767]"},
		{"1.5", Int, AtLeast(0), 0, "Invalid value 1.5 for configuration k: not a number of type INT (32-bit signed integer); allowed range [0, 2147483647]"},
		{"", Int, AtLeast(0), 0, "Invalid value  for configuration k: not a number of type INT (32-bit signed integer); allowed range [0, 2147483647]"},
		{"0", Int, AtLeast(1), 0, "Invalid value 0 for configuration k: type INT, allowed range [1, 2147483647]"},
		{"11", Long, Between(1, 10), 0, "Invalid value 11 for configuration k: type LONG, allowed range [1, 10]"},
	} {
		got, err := Parse("k", c.value, c.typ, c.r)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("Parse(%q, %s) = %d, %v; want %d", c.value, c.typ, got, err, c.want)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("Parse(%q, %s) error %v\nwant %s", c.value, c.typ, err, c.err)
		}
		var ke *Error
		if c.err != "" && (!errors.As(err, &ke) || ke.Key != "k") {
			t.Errorf("Parse(%q): %T is not a *kconfig.Error naming the key", c.value, err)
		}
	}
	if err := Check("k", 3000000000, Int, AtLeast(1)); err == nil || err.Error() != "Invalid value 3000000000 for configuration k: type INT, allowed range [1, 2147483647]" {
		t.Errorf("Check: %v", err)
	}
	if err := Check("k", 5, Int, AtLeast(1)); err != nil {
		t.Errorf("Check(5): %v", err)
	}
	if Millis(math.MaxInt64) != time.Duration(math.MaxInt64) || Millis(1500) != 1500*time.Millisecond {
		t.Errorf("Millis: %v, %v", Millis(math.MaxInt64), Millis(1500))
	}
}
