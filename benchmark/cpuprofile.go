package benchmark

// The broker's share of this process's CPU during a cell: a runtime/pprof CPU profile of the cell,
// summed over the samples whose goroutine carries lab.BrokerProfileLabel (every goroutine of the
// in-process broker: its connections' request handlers and the group coordinator). The profile's
// protobuf is read here directly (the few fields needed), without the pprof module.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"runtime/pprof"

	"github.com/rebalancelab/rebalancelab/lab"
)

// cellProfile is a CPU profile running in memory; nil when another profile already runs
// (bench storm --cpuprofile): the cell then has no coordinator CPU figure.
type cellProfile struct{ buf bytes.Buffer }

func startCellProfile() *cellProfile {
	p := &cellProfile{}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		return nil
	}
	return p
}

// stop ends the profile and returns the CPU of the samples labelled lab.BrokerProfileLabel, ms
// (ok=false: no profile, or it could not be read).
func (p *cellProfile) stop() (ms int64, ok bool) {
	if p == nil {
		return 0, false
	}
	pprof.StopCPUProfile()
	ns, _, err := labelledCPU(p.buf.Bytes(), lab.BrokerProfileLabel)
	if err != nil {
		return 0, false
	}
	return ns / 1e6, true
}

// labelledCPU sums the cpu/nanoseconds value of the samples of a gzipped profile.proto that carry a
// label with key key, and of all the samples.
func labelledCPU(gz []byte, key string) (labelled, all int64, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return 0, 0, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return 0, 0, err
	}
	type sample struct {
		values    []int64
		labelKeys []int64
	}
	var samples []sample
	var strs []string
	var types [][2]int64 // sample_type: (type, unit) string indices
	err = protoFields(raw, func(f int, wire int, v uint64, b []byte) error {
		switch {
		case f == 1 && wire == 2: // ValueType sample_type
			var t [2]int64
			err := protoFields(b, func(f, wire int, v uint64, _ []byte) error {
				if (f == 1 || f == 2) && wire == 0 {
					t[f-1] = int64(v)
				}
				return nil
			})
			types = append(types, t)
			return err
		case f == 2 && wire == 2: // Sample
			var s sample
			err := protoFields(b, func(f, wire int, v uint64, b []byte) error {
				switch {
				case f == 2 && wire == 2: // packed values
					for len(b) > 0 {
						x, n := binary.Uvarint(b)
						if n <= 0 {
							return errors.New("bad packed varint")
						}
						s.values, b = append(s.values, int64(x)), b[n:]
					}
				case f == 2 && wire == 0:
					s.values = append(s.values, int64(v))
				case f == 3 && wire == 2: // Label
					return protoFields(b, func(f, wire int, v uint64, _ []byte) error {
						if f == 1 && wire == 0 {
							s.labelKeys = append(s.labelKeys, int64(v))
						}
						return nil
					})
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case f == 6 && wire == 2:
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	col := -1
	for i, t := range types {
		if t[0] < int64(len(strs)) && t[1] < int64(len(strs)) && strs[t[0]] == "cpu" && strs[t[1]] == "nanoseconds" {
			col = i
		}
	}
	if col < 0 {
		return 0, 0, errors.New("no cpu/nanoseconds sample type")
	}
	for _, s := range samples {
		if col >= len(s.values) {
			continue
		}
		all += s.values[col]
		for _, k := range s.labelKeys {
			if k < int64(len(strs)) && strs[k] == key {
				labelled += s.values[col]
				break
			}
		}
	}
	return labelled, all, nil
}

// protoFields calls fn for each field of a protobuf message: its number, wire type, and the varint
// (wire 0) or the bytes (wire 2); fixed-width fields are skipped.
func protoFields(b []byte, fn func(field, wire int, v uint64, b []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad tag")
		}
		b = b[n:]
		field, wire := int(tag>>3), int(tag&7)
		var v uint64
		var body []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errors.New("short fixed64")
			}
			b = b[8:]
			continue
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errors.New("bad length")
			}
			body, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errors.New("short fixed32")
			}
			b = b[4:]
			continue
		default:
			return errors.New("unknown wire type")
		}
		if err := fn(field, wire, v, body); err != nil {
			return err
		}
	}
	return nil
}
